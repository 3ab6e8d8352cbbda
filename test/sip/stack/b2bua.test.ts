import { strict as assert } from 'node:assert';
import { SipCanceledError, SipResponseError, type Dialog, type B2buaLegs } from '../../../sip/stack/index.js';
import { Agents, SDP_A, SDP_B, uriOf, waitFor } from './helpers.js';

describe('createB2BUA', function () {
  this.timeout(10000);
  const agents = new Agents();
  afterEach(() => agents.closeAll());

  async function trio() {
    const [caller, b2b, callee] = [await agents.make(), await agents.make(), await agents.make()];
    return { caller, b2b, callee };
  }

  it('passes provisional responses back, answers with the callee SDP, and a BYE on one leg ends the other', async () => {
    const { caller, b2b, callee } = await trio();
    const calleeDialog = waitFor<Dialog>((done) =>
      callee.onRequest('INVITE', async (req, srv) => {
        srv.send(183, 'Session Progress', { body: SDP_B });
        done(await callee.createUAS(req, { localSdp: SDP_B }));
      }),
    );
    const legs = waitFor<B2buaLegs>((done) =>
      b2b.onRequest('INVITE', async (req) => done(await b2b.createB2BUA(req, uriOf(callee, 'TCP')))),
    );
    const early: number[] = [];
    const a = await caller.createUAC(uriOf(b2b), { localSdp: SDP_A, onProvisional: (r) => early.push(r.status) });
    assert.deepEqual(early, [183]);
    assert.equal(a.remoteSdp, SDP_B);
    const c = await calleeDialog;
    assert.equal(c.remoteSdp, SDP_A);
    const { uac } = await legs;
    const ended = waitFor<string>((done) => uac.on('destroy', done));
    const calleeBye = waitFor<string>((done) => c.on('destroy', done));
    await a.bye();
    assert.equal(await ended, 'local-bye');
    assert.equal(await calleeBye, 'remote-bye');
  });

  it('maps the callee final failure to the caller', async () => {
    const { caller, b2b, callee } = await trio();
    callee.onRequest('INVITE', (_req, srv) => srv.send(486, 'Busy Here'));
    b2b.onRequest('INVITE', (req) => b2b.createB2BUA(req, uriOf(callee)).catch(() => undefined));
    await assert.rejects(
      caller.createUAC(uriOf(b2b), { localSdp: SDP_A }),
      (e: unknown) => e instanceof SipResponseError && e.status === 486,
    );
  });

  it('propagates the caller CANCEL to the callee (§9)', async () => {
    const { caller, b2b, callee } = await trio();
    const calleeCanceled = waitFor<boolean>((done) =>
      callee.onRequest('INVITE', (_req, srv) => {
        srv.send(180);
        srv.signal.addEventListener('abort', () => done(true));
      }),
    );
    const b2bResult = waitFor<unknown>((done) =>
      b2b.onRequest('INVITE', (req) => b2b.createB2BUA(req, uriOf(callee)).then(done, done)),
    );
    const ac = new AbortController();
    await assert.rejects(
      caller.createUAC(uriOf(b2b), { localSdp: SDP_A, signal: ac.signal, onProvisional: () => ac.abort() }),
      SipCanceledError,
    );
    assert.equal(await calleeCanceled, true);
    assert.ok((await b2bResult) instanceof SipCanceledError);
  });
});
