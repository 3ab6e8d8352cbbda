import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { setRate, type Db } from '../../../store/index.js';
import { nextPort } from '../../support/ports.js';
import { toneAmplitude, toneSeconds } from '../../support/tones.js';
import { eventually } from '../../support/wait.js';
import { AccountServer, addCarrier, allocateSwitchPorts, api, createAccountWithDid } from '../support/harness.js';
import { ToneCallers, heardSince } from '../support/conference-legs.js';
import {
  freshPostgresStore,
  killSwitch,
  processEnv,
  startSwitch,
  type SwitchProcess,
} from '../support/switch-process.js';

const TONES = [440, 660, 880] as const;

/** Sends one INVITE claiming to come from node `node` with a made-up signature; answers the final status line. */
async function forgedNodeLeg(sipPort: number, node: string): Promise<string> {
  const sock = createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', r));
  const port = sock.address().port;
  const join = Buffer.from(JSON.stringify({ callId: 'x', accountId: 'x', noun: { name: 'standup' }, at: Date.now() }));
  const invite = [
    `INVITE sip:conference@127.0.0.1:${sipPort} SIP/2.0`,
    `Via: SIP/2.0/UDP 127.0.0.1:${port};branch=z9hG4bK-forged-${port}`,
    `From: <sip:forger@127.0.0.1:${port}>;tag=f${port}`,
    `To: <sip:conference@127.0.0.1:${sipPort}>`,
    `Call-ID: forged-${port}@127.0.0.1`,
    'CSeq: 1 INVITE',
    `Contact: <sip:forger@127.0.0.1:${port}>`,
    'Max-Forwards: 70',
    `X-Simu-Node: ${node}`,
    `X-Simu-Room-Join: ${join.toString('base64url')}`,
    'X-Simu-Node-Signature: AAAA',
    'Content-Length: 0',
    '',
    '',
  ].join('\r\n');
  try {
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no final answer to the forged leg')), 5000);
      sock.on('message', (m) => {
        const line = m.toString().split('\r\n')[0]!;
        if (/^SIP\/2\.0 [2-6]\d\d/.test(line)) {
          clearTimeout(timer);
          resolve(line);
        }
      });
      sock.send(invite, sipPort, '127.0.0.1');
    });
  } finally {
    sock.close();
  }
}

/**
 * Three nodes on one PostgreSQL, a caller of one conference arriving on each: the room is held by the node the
 * first caller reached, and the callers of the two others join it through legs between the nodes. Each caller
 * hears the two others' tones (Goertzel) and not its own; a participant of another node is muted and kicked
 * through any node's API, and a leg between nodes ends from either side. When the holding node is SIGKILLed, the
 * caller of another node still in the room is hung up (its Dial ends with the room), and every call is billed once.
 */
describe('e2e: one conference across three nodes', function () {
  this.timeout(180_000);
  const DID = '+254711500041';
  const server = new AccountServer();
  const nodes: Array<{ id: string; ports: ReturnType<typeof allocateSwitchPorts>; sw?: SwitchProcess }> = [
    { id: 'room-a', ports: allocateSwitchPorts() },
    { id: 'room-b', ports: allocateSwitchPorts() },
    { id: 'room-c', ports: allocateSwitchPorts() },
  ];
  const callers = new ToneCallers();
  let url: string;
  let db: Db;

  before(async () => {
    await server.listen();
    ({ url, db } = await freshPostgresStore('simu_rooms')); // migrated once, before the nodes start
  });

  after(async () => {
    callers.remove();
    for (const n of nodes) await killSwitch(n.sw, n.ports.ng);
    await db?.destroy();
    await server.close();
  });

  it('callers on three nodes hear each other, are muted and kicked from any node; the holder dies, each billed once', async () => {
    // One after another: each runs the migrations at start.
    for (const n of nodes) {
      n.sw = await startSwitch(
        processEnv(n.ports, { SIMU_DATABASE_URL: url, SIMU_NODE_ID: n.id, SIMU_NODE_GONE_AFTER_SECONDS: '4' }),
      );
    }
    const [a, b, c] = nodes as [(typeof nodes)[number], (typeof nodes)[number], (typeof nodes)[number]];
    await setRate(db, 'inbound', 6000);
    const acct = await createAccountWithDid(db, DID);
    await db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status') });
    await db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/conference') });
    server.verbs('/conference', '<Response><Dial><Conference beep="false">standup</Conference></Dial></Response>');
    await addCarrier(db, nextPort());
    await new Promise((r) => setTimeout(r, 2500)); // each node re-reads trunks within 2 s

    const baseB = `http://127.0.0.1:${b.ports.http}`;
    const conferences = async () =>
      (await api(baseB, acct.key, 'GET', '/api/conferences')).body.conferences as Array<{
        sid: string;
        participant_count: number;
      }>;
    for (const [i, n] of nodes.entries()) {
      await callers.call({ sip: n.ports.sip, did: DID, tone: TONES[i]! });
      await eventually(
        async () => {
          const list = await conferences();
          return list.length === 1 && list[0]!.participant_count === i + 1;
        },
        `${TONES[i]} Hz joined the one conference (through ${n.id})`,
        15_000,
      );
    }
    const calls = await db('calls').where({ account_id: acct.id }).orderBy('created_at').select('id', 'node_id');
    assert.deepEqual(
      calls.map((r) => r.node_id),
      ['room-a', 'room-b', 'room-c'],
      'each caller is held by the node it called; no other call rows',
    );
    const lease = await db('room_leases').where({ account_id: acct.id }).select('kind', 'name', 'node_id');
    assert.deepEqual(lease, [{ kind: 'conference', name: 'standup', node_id: 'room-a' }]);

    const since = Date.now();
    await new Promise((r) => setTimeout(r, 3000));
    const report: string[] = [];
    let ok = true;
    callers.legs.forEach((listener, i) => {
      const audio = heardSince(listener, since);
      report.push(`${listener.tone} Hz caller: ${(audio.length / 8000).toFixed(1)} s captured`);
      if (audio.length < 8000) ok = false;
      callers.legs.forEach((speaker, j) => {
        const seconds = toneSeconds(audio, speaker.tone, 2000);
        const amp = toneAmplitude(audio, speaker.tone);
        report.push(`${listener.tone} Hz caller hears ${speaker.tone} Hz for ${seconds} s, ${amp.toFixed(0)} overall`);
        if (i !== j ? seconds < 1 : amp > 400) ok = false;
      });
    });
    assert.ok(ok, report.join('\n'));

    // A participant of another node is one like any other: muted through C's API, held on B, in A's room.
    const baseC = `http://127.0.0.1:${c.ports.http}`;
    const conf = (await conferences())[0]!;
    const people = (await api(baseC, acct.key, 'GET', `/api/conferences/${conf.sid}/participants`)).body
      .participants as Array<{ call_sid: string }>;
    const onBSid = (await db('calls').where({ account_id: acct.id, node_id: 'room-b' }).first()).sid;
    assert.ok(
      people.some((p) => p.call_sid === onBSid),
      JSON.stringify(people),
    );
    const muted = await api(baseC, acct.key, 'POST', `/api/conferences/${conf.sid}/participants/${onBSid}`, {
      muted: true,
    });
    assert.equal(muted.status, 200, JSON.stringify(muted.body));
    const afterMute = Date.now() + 300;
    await new Promise((r) => setTimeout(r, 2500));
    for (const listener of [callers.legs[0]!, callers.legs[2]!]) {
      const heard = toneAmplitude(heardSince(listener, afterMute), 660);
      assert.ok(heard < 400, `${listener.tone} Hz caller still hears the muted 660 Hz caller (${heard.toFixed(0)})`);
    }

    // Nobody outside the cluster joins a room by claiming to be a node.
    assert.match(await forgedNodeLeg(b.ports.sip, 'room-a'), /^SIP\/2\.0 403/);

    // Either side ends a leg between nodes. The holder's: a fourth caller, on C, kicked through B's API, is hung up
    // by C (its Dial ends, then its document). The caller's: C's first caller hung up through B's API leaves the room.
    const count = async () => (await conferences())[0]?.participant_count;
    const fourth = await callers.call({ sip: c.ports.sip, did: DID, tone: 1000 });
    await eventually(async () => (await count()) === 4, 'a fourth caller joined through C', 15_000);
    const fourthSid = (await db('calls').where({ account_id: acct.id }).orderBy('created_at', 'desc').first()).sid;
    const kicked = await api(baseB, acct.key, 'POST', `/api/conferences/${conf.sid}/participants/${fourthSid}/kick`);
    assert.equal(kicked.status, 204, JSON.stringify(kicked.body));
    const out = await Promise.race([fourth.sipp.done, new Promise<undefined>((r) => setTimeout(r, 15_000))]);
    assert.equal(out?.code, 0, `the kicked caller was hung up by C:\n${fourth.sipp.output()}`);
    await eventually(async () => (await count()) === 3, 'the kicked caller left', 10_000);
    const onCSid = (await db('calls').where({ account_id: acct.id, node_id: 'room-c' }).orderBy('created_at').first())
      .sid;
    const hungUp = await api(baseB, acct.key, 'POST', '/api/calls/hangup', { sid: onCSid });
    assert.equal(hungUp.status, 200, JSON.stringify(hungUp.body));
    await eventually(async () => (await count()) === 2, "C's caller hung up left the room", 10_000);

    // The node holding the room dies: B's caller leaves it (its Dial ends, its document with it: B hangs it up),
    // A's caller is closed by a survivor's takeover.
    await a.sw!.stop('SIGKILL');
    a.sw = undefined;
    for (const leg of [callers.legs[1]!]) {
      const r = await Promise.race([leg.sipp.done, new Promise<undefined>((r) => setTimeout(r, 20_000, undefined))]);
      assert.equal(r?.code, 0, `the ${leg.tone} Hz caller was hung up by its node:\n${leg.sipp.output()}`);
    }
    await eventually(
      async () => (await db('calls').where({ account_id: acct.id }).whereNot({ status: 'completed' })).length === 0,
      'every call completed',
      20_000,
    );
    const rows = await db('calls').where({ account_id: acct.id }).orderBy('created_at');
    assert.deepEqual(
      rows.map((r) => r.reason_code),
      ['END.0504', 'END.0200', 'END.0200', 'END.0200'],
    );
    assert.equal(
      await db('room_leases')
        .count({ n: '*' })
        .first()
        .then((r) => Number(r?.n)),
      0,
      'no lease left',
    );
    await new Promise((r) => setTimeout(r, 2000)); // nothing more is billed
    for (const r of rows) {
      const debits = await db('wallet_transactions').where({ call_id: r.id, direction: 'debit' });
      const billed = debits.reduce((s, d) => s + Number(d.amount_cents), 0);
      assert.ok(Number(r.cost_cents) > 0, `call ${r.sid} was billed its talk time`);
      assert.equal(billed, Number(r.cost_cents), `call ${r.sid}: the ledger holds its cost once`);
    }
    assert.ok(b.sw && c.sw, 'B and C still run');
  });
});
