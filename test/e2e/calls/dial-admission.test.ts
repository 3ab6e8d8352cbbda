import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { carrier, createAccountWithDid } from '../support/harness.js';
import { useCarrierSwitch } from '../support/carrier-switch.js';

/**
 * Issue 22, item 8: a Dial to the PSTN is a new call of the account and passes the admission originate passes
 * (suspension, balance, concurrency; CPS in test/calls/dial-admission.test.ts). A refused leg is never dialled
 * (the carrier sees no INVITE), never written, and the verbs go on with DialCallStatus=failed.
 */
describe('e2e: a Dial leg to the PSTN goes through admission', function () {
  this.timeout(60000);
  const DID = '+254711300001';
  const POOR_DID = '+254711300002';
  // The carrier sends from 127.0.0.1 (SIPp at t.callerPort) and takes the Dial legs at t.carrierPort.
  const t = useCarrierSwitch({ did: DID });
  const { server } = t;
  const CARRIER_PORT = t.carrierPort;

  before(() => {
    server.verbs('/after', '<Response><Say>The call could not be connected.</Say><Hangup/></Response>');
  });

  afterEach(async () => {
    await t.ctx.db('accounts').where({ id: t.acct.id }).update({ status: 'active', max_concurrent_calls: 50 });
  });

  /** The carrier's side of the Dial legs, as a bare socket: it sees every datagram the switch sends it. */
  async function silentCallee() {
    const socket = dgram.createSocket('udp4');
    const received: string[] = [];
    socket.on('message', (m) => received.push(m.toString('latin1').split('\r\n')[0]));
    await new Promise<void>((r) => socket.bind(CARRIER_PORT, '127.0.0.1', () => r()));
    return { received, close: () => new Promise<void>((r) => socket.close(() => r())) };
  }

  function carrierCalls(did: string) {
    return t.carrierCalls(undefined, did);
  }

  async function dialDocument(did: string, route: string, xml: string) {
    server.verbs(route, xml);
    await t.ctx
      .db('numbers')
      .where({ number: did })
      .update({ webhook_voice_inbound: server.url(route) });
  }

  /** The refused Dial's trace: the action's DialCallStatus, DIAL.0300's reason, and the parent's child rows. */
  async function refusal(before: number, parentDid: string) {
    const requests = server.requests.slice(before);
    const action = requests.find((r) => r.url === '/after')?.json;
    const done = requests.find((r) => r.json?.code === 'DIAL.0300')?.json;
    const parent = await t.ctx.db('calls').where({ to_number: parentDid }).orderBy('created_at', 'desc').first();
    const children = await t.ctx.db('calls').where({ parent_call_id: parent.id });
    return { action, done, parent, children };
  }

  it('at the concurrency cap, the Dial is refused: no INVITE to the carrier, no child CDR, LIMIT.0429 reaches DIAL.0300, the action gets failed', async () => {
    // The inbound call itself is the account's one live call.
    await t.ctx.db('accounts').where({ id: t.acct.id }).update({ max_concurrent_calls: 1 });
    await dialDocument(
      DID,
      '/cap',
      `<Response><Dial action="${server.url('/after')}" timeout="5"><Number>+254722000011</Number></Dial></Response>`,
    );
    const callee = await silentCallee();
    const before = server.requests.length;
    try {
      t.sipp = carrierCalls(DID);
      assert.equal(await t.sipp.exited, 0, t.sipp.output());
      await server.waitFor(() => server.requests.slice(before).some((r) => r.url === '/after'), 10000, 'the action');
      const r = await refusal(before, DID);
      assert.equal(r.action.DialCallStatus, 'failed');
      assert.equal(r.action.DialCallDuration, 0);
      await server.waitFor(
        () => server.requests.slice(before).some((q) => q.json?.code === 'DIAL.0300'),
        10000,
        'dial.completed',
      );
      assert.equal((await refusal(before, DID)).done.data.reason, 'LIMIT.0429');
      assert.equal(r.children.length, 0, 'a refused leg is not written');
      assert.deepEqual(callee.received, [], 'the carrier was sent nothing');
      assert.ok(t.sink.speechSeconds() >= 1, `the call went on with the action's verbs: ${t.sink.speechSeconds()} s`);
    } finally {
      await callee.close();
    }
  });

  it('below the cap the same Dial reaches the carrier (SIPp answers busy): DialCallStatus=busy, one child CDR', async () => {
    await t.ctx.db('accounts').where({ id: t.acct.id }).update({ max_concurrent_calls: 2 });
    await dialDocument(
      DID,
      '/cap',
      `<Response><Dial action="${server.url('/after')}" timeout="5"><Number>+254722000012</Number></Dial></Response>`,
    );
    const callee = carrier({ port: CARRIER_PORT, scenario: 'uas-busy.xml' });
    const before = server.requests.length;
    try {
      await new Promise((r) => setTimeout(r, 300));
      t.sipp = carrierCalls(DID);
      assert.equal(await t.sipp.exited, 0, t.sipp.output());
      assert.equal(await callee.exited, 0, callee.output());
      await server.waitFor(() => server.requests.slice(before).some((r) => r.url === '/after'), 10000, 'the action');
      const r = await refusal(before, DID);
      assert.equal(r.action.DialCallStatus, 'busy');
      assert.equal(r.children.length, 1);
      assert.equal(r.children[0].status, 'failed');
      assert.equal(r.children[0].reason_code, 'END.0486');
    } finally {
      callee.kill();
    }
  });

  it('an account suspended mid-call: the Dial is refused with BILL.0407, nothing reaches the carrier', async () => {
    // The Say gives the test time to suspend the account after the call was admitted and answered.
    await dialDocument(
      DID,
      '/suspend',
      '<Response><Say>Please hold while we connect your call.</Say>' +
        `<Dial action="${server.url('/after')}" timeout="5"><Number>+254722000013</Number></Dial></Response>`,
    );
    const callee = await silentCallee();
    const before = server.requests.length;
    try {
      t.sipp = carrierCalls(DID);
      await server.waitFor(() => server.requests.slice(before).some((r) => r.url === '/suspend'), 10000, 'the call');
      await t.ctx.db('accounts').where({ id: t.acct.id }).update({ status: 'suspended' });
      assert.equal(await t.sipp.exited, 0, t.sipp.output());
      await server.waitFor(
        () => server.requests.slice(before).some((q) => q.json?.code === 'DIAL.0300'),
        10000,
        'dial.completed',
      );
      const r = await refusal(before, DID);
      assert.equal(r.done.data.DialCallStatus, 'failed');
      assert.equal(r.done.data.reason, 'BILL.0407');
      assert.equal(r.action?.DialCallStatus, 'failed');
      assert.equal(r.children.length, 0);
      assert.deepEqual(callee.received, [], 'the carrier was sent nothing');
    } finally {
      await callee.close();
    }
  });

  it('a balance below the first block of the leg (on top of the live call): BILL.0402, nothing dialled nor charged', async () => {
    // 1.50 KES: enough for the inbound call (admitted against 0.01), not for one more first minute at 1.00 on top
    // of the live call's own (2 x 1.00).
    const poor = await createAccountWithDid(t.ctx.db, POOR_DID, 150);
    await t.ctx
      .db('accounts')
      .where({ id: poor.id })
      .update({ webhook_status: server.url('/status') });
    await dialDocument(
      POOR_DID,
      '/poor',
      `<Response><Dial action="${server.url('/after')}" timeout="5"><Number>+254722000014</Number></Dial></Response>`,
    );
    const callee = await silentCallee();
    const before = server.requests.length;
    try {
      t.sipp = carrierCalls(POOR_DID);
      assert.equal(await t.sipp.exited, 0, t.sipp.output());
      await server.waitFor(
        () => server.requests.slice(before).some((q) => q.json?.code === 'DIAL.0300'),
        10000,
        'dial.completed',
      );
      const r = await refusal(before, POOR_DID);
      assert.equal(r.action.DialCallStatus, 'failed');
      assert.equal(r.done.data.reason, 'BILL.0402');
      assert.equal(r.children.length, 0);
      assert.deepEqual(callee.received, [], 'the carrier was sent nothing');
      const charged = await t.ctx.db('wallet_transactions').where({ account_id: poor.id, kind: 'call' });
      assert.ok(
        charged.every((t) => t.call_id === r.parent.id),
        'only the inbound call itself is charged',
      );
    } finally {
      await callee.close();
    }
  });
});
