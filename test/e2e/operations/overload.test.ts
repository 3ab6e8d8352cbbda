import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import dgram from 'node:dgram';
import { UserAgent } from '../../../sip/stack/index.js';
import { eventually } from '../../support/wait.js';
import {
  startTestSwitch,
  createAccountWithDid,
  addCarrier,
  AccountServer,
  api,
  SCENARIOS,
  type TestAccount,
  allocateSwitchPorts,
} from '../support/harness.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import { runSipp, traceCounts } from '../../support/sipp.js';

const PORTS = allocateSwitchPorts();
const CARRIER = nextPort(); // the carrier UA: takes outbound legs
const CALLER = nextPort(); // SIPp offering inbound calls
const CALLER_MEDIA = nextPorts(4); // its RTP sockets (SIPp -mp): from the block, not searched for from a fixed one

/**
 * Issue 20, overload control, through the real switch: with a platform cap of 5 new calls a second, a SIPp carrier
 * offering 15/s gets the excess refused with 503 + Retry-After, the admitted calls run to their end (their BYEs are
 * never shed), nothing is written for a refused call, and REST originate is refused with PLATFORM.0503 too.
 * The load-based trigger (store backlog, event-loop delay) is proven by test/overload/overload-control.test.ts and measured
 * by bench/calls/carrier.bench.ts; both triggers share this path at the edges.
 */
describe('e2e: overload control sheds new calls with 503 + Retry-After', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  const server = new AccountServer();
  const SIP = PORTS.sip;
  // The carrier's side: takes the switch's outbound legs (refused 486) and sends single INVITEs of its own.
  const carrierUa = new UserAgent();

  before(async () => {
    ctx = await startTestSwitch({
      ...PORTS,
      // The main thread's own gate (the front, on by default, is test/e2e/operations/overload-front.test.ts).
      env: { SIMU_PLATFORM_MAX_CPS: '5', SIMU_OVERLOAD_RETRY_AFTER: '3', SIMU_OVERLOAD_UDP_FRONT: 'false' },
    });
    await server.listen();
    acct = await createAccountWithDid(ctx.db, '+254711260001', 10_000_000);
    await ctx.db('accounts').where({ id: acct.id }).update({ max_concurrent_calls: 1000, max_cps: 1000 });
    server.verbs('/voice', '<Response><Pause length="1"/><Hangup/></Response>');
    await ctx
      .db('numbers')
      .where({ number: acct.did })
      .update({ webhook_voice_inbound: server.url('/voice') });
    await carrierUa.listen({ udp: { host: '127.0.0.1', port: CARRIER } });
    carrierUa.onRequest('INVITE', (_req, srv) => srv.send(486, 'Busy Here'));
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
  });

  after(async () => {
    await carrierUa.close();
    await server.close();
    await ctx?.sw.stop();
  });

  it('a carrier offering three times the cap: the excess gets 503, the rest complete, refusals write nothing', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'overload-'));
    const before = Number((await ctx.db('calls').count({ n: '*' }).first())?.n ?? 0);
    // SIPp writes its -trace_counts file in its working directory: a scratch one of this test.
    const sipp = runSipp(
      [
        `127.0.0.1:${SIP}`,
        ...['-sf', path.join(SCENARIOS, 'uac-inbound-or-503.xml'), '-s', acct.did.slice(1)],
        ...['-i', '127.0.0.1', '-p', String(CALLER), '-mp', String(CALLER_MEDIA), '-r', '15', '-m', '45'],
        ...['-trace_counts', '-nostdin', '-timeout', '40s'],
      ],
      { cwd: dir, limitMs: 45_000 },
    );
    await sipp.exited;
    const counts = traceCounts(dir, 'uac-inbound-or-503.xml');
    const refused = counts.get('503_Recv') ?? 0;
    const answered = counts.get('200_Recv') ?? 0;
    assert.equal(refused + answered, 45, `every attempt ended one way or the other: ${JSON.stringify([...counts])}`);
    // 45 calls offered over 3 s at a cap of 5/s: about 15 admitted (the first second's window may admit a few more).
    assert.ok(answered >= 12 && answered <= 22, `admitted ${answered}`);
    assert.ok(counts.get('BYE_Recv') === answered, 'every admitted call got its BYE from the switch');
    await eventually(
      async () => Number((await ctx.db('calls').count({ n: '*' }).first())?.n ?? 0) - before === answered,
      'one CDR per admitted call and none for a refused one',
    );
  });

  it('a shed INVITE is answered 503 with Retry-After at once; a shed originate is PLATFORM.0503 with Retry-After', async () => {
    // Raw INVITEs for a number nobody owns, in one burst: overload control answers before any lookup, so the
    // admitted ones get 404 and the shed ones 503; the Retry-After is read off the wire.
    const finals = await rawInviteBurst(SIP, 10);
    const shedInvites = finals.filter((r) => r.startsWith('SIP/2.0 503'));
    assert.ok(shedInvites.length >= 4, finals.map((r) => r.split('\r\n')[0]).join(', '));
    for (const r of shedInvites) assert.match(r, /\r\nRetry-After: 3\r\n/i);

    const before = Number((await ctx.db('calls').count({ n: '*' }).first())?.n ?? 0);
    const placed = await Promise.all(
      Array.from({ length: 10 }, () =>
        api(ctx.baseUrl, acct.key, 'POST', '/api/calls/originate', {
          to: '+254722000001',
          from: acct.did,
          url: server.url('/voice'),
        }),
      ),
    );
    const shed = placed.filter((r) => r.status === 503);
    assert.ok(shed.length >= 4, JSON.stringify(placed.map((r) => r.status)));
    for (const r of shed) assert.equal(r.body.code, 'PLATFORM.0503');
    const created = placed.filter((r) => r.status === 201).length;
    await eventually(
      async () => Number((await ctx.db('calls').count({ n: '*' }).first())?.n ?? 0) - before === created,
      'rows only for the originates that were admitted',
    );
  });
});

/** Sends `n` INVITEs at once from a UDP socket of 127.0.0.1 and resolves with each call's final response. */
async function rawInviteBurst(port: number, n: number): Promise<string[]> {
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  const local = sock.address().port;
  const finals = new Map<string, string>();
  sock.on('message', (buf) => {
    const text = buf.toString();
    const callId = /\r\nCall-ID: *([^\r]+)/i.exec(text)?.[1];
    if (callId && /^SIP\/2\.0 [2-6]\d\d/.test(text)) finals.set(callId, text);
  });
  for (let i = 0; i < n; i++) {
    const msg = [
      `INVITE sip:254799000000@127.0.0.1:${port} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${local};branch=z9hG4bK-ovl-${i}-${process.pid}`,
      `From: <sip:+254733555000@127.0.0.1:${local}>;tag=ovl${i}`,
      `To: <sip:254799000000@127.0.0.1:${port}>`,
      `Call-ID: overload-${i}-${process.pid}@127.0.0.1`,
      'CSeq: 1 INVITE',
      `Contact: <sip:carrier@127.0.0.1:${local}>`,
      'Max-Forwards: 70',
      'Content-Length: 0',
      '',
      '',
    ].join('\r\n');
    sock.send(msg, port, '127.0.0.1');
  }
  try {
    await eventually(() => finals.size === n, `final responses to ${n} INVITEs`);
  } finally {
    sock.close();
  }
  return [...finals.values()];
}
