import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually } from '../../support/wait.js';
import {
  startTestSwitch,
  createAccountWithDid,
  addCarrier,
  AccountServer,
  SCENARIOS,
  type TestAccount,
  allocateSwitchPorts,
} from '../support/harness.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import { runSipp, traceCounts } from '../../support/sipp.js';

const PORTS = allocateSwitchPorts();
const CARRIER = nextPort(); // the carrier trunk's address (127.0.0.1): SIPp's INVITEs come from it
const CALLER = nextPort();
const CALLER_MEDIA = nextPorts(4);

/**
 * Issue 20, overload with the UDP front (overload.udpFront, sip/stack/transport/udp-front.ts): a SIPp carrier
 * offers four times a platform cap of 5 calls/s while the switch's main thread is deliberately blocked for 200 ms
 * out of every 300 ms. The excess is refused by the front's worker thread within 10 ms (SIPp's own INVITE->503
 * timer; 90 % of them, the rest under 100 ms, on a shared box), with Retry-After; the admitted calls run to their
 * end and are the only ones written.
 */
describe('e2e: the UDP front refuses the excess within 10 ms while the main thread is blocked', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  const server = new AccountServer();

  before(async () => {
    ctx = await startTestSwitch({
      ...PORTS,
      env: { SIMU_PLATFORM_MAX_CPS: '5', SIMU_OVERLOAD_RETRY_AFTER: '3', SIMU_OVERLOAD_UDP_FRONT: 'true' },
    });
    await server.listen();
    acct = await createAccountWithDid(ctx.db, '+254711270001', 10_000_000);
    await ctx.db('accounts').where({ id: acct.id }).update({ max_concurrent_calls: 1000, max_cps: 1000 });
    server.verbs('/voice', '<Response><Pause length="1"/><Hangup/></Response>');
    await ctx
      .db('numbers')
      .where({ number: acct.did })
      .update({ webhook_voice_inbound: server.url('/voice') });
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
  });

  after(async () => {
    await server.close();
    await ctx?.sw.stop();
  });

  it('the front is on', () => assert.ok(ctx.sw.sip?.ua.udpFront, 'the kernel delivers the SIP port to the worker'));

  it('20 calls/s against a cap of 5 with the main loop blocked: 503 + Retry-After in < 10 ms, the rest complete', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'overload-front-'));
    const before = Number((await ctx.db('calls').count({ n: '*' }).first())?.n ?? 0);
    const sipp = runSipp(
      [
        `127.0.0.1:${PORTS.sip}`,
        ...['-sf', path.join(SCENARIOS, 'uac-inbound-or-503.xml'), '-s', acct.did.slice(1)],
        ...['-i', '127.0.0.1', '-p', String(CALLER), '-mp', String(CALLER_MEDIA), '-r', '20', '-m', '60'],
        ...['-trace_counts', '-trace_rtt', '-rtt_freq', '1', '-nostdin', '-timeout', '40s'],
      ],
      { cwd: dir, limitMs: 45_000 },
    );
    let running = true;
    void sipp.exited.then(() => (running = false));
    // The test's process is the switch's: this loop holds its event loop for 200 ms, then lets it run for 100 ms.
    const started = Date.now();
    while (running && Date.now() - started < 3500) {
      const until = performance.now() + 200;
      while (performance.now() < until);
      await new Promise((r) => setTimeout(r, 100));
    }
    await sipp.exited;
    const counts = traceCounts(dir, 'uac-inbound-or-503.xml');
    const refused = counts.get('503_Recv') ?? 0;
    const answered = counts.get('200_Recv') ?? 0;
    assert.equal(refused + answered, 60, `every attempt ended one way or the other: ${JSON.stringify([...counts])}`);
    assert.ok(answered >= 12 && answered <= 24, `admitted ${answered}`);
    assert.equal(counts.get('BYE_Recv'), answered, 'every admitted call got its BYE from the switch');
    // SIPp's timer 3: INVITE -> 503, in whole milliseconds. The scenario fails a 503 without Retry-After.
    const times = rtt(dir, 3).sort((a, b) => a - b);
    assert.equal(times.length, refused);
    // The figure is the bench's (on a quiet box p99 under 10 ms). What this test holds to: the 503s do not wait for
    // the blocked main thread (without the front: p90 about 190, p99 240 ms), with room for a busy CI box.
    const at = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!;
    assert.ok(at(0.9) < 50, `INVITE->503 p90 ${at(0.9)} ms (all: ${times.join(' ')})`);
    assert.ok(at(0.99) < 150, `INVITE->503 p99 ${at(0.99)} ms (all: ${times.join(' ')})`);
    await eventually(
      async () => Number((await ctx.db('calls').count({ n: '*' }).first())?.n ?? 0) - before === answered,
      'one CDR per admitted call and none for a refused one',
    );
  });
});

/** SIPp's -trace_rtt rows ("date_ms;response_time_ms;rtd_no") of one timer. */
function rtt(dir: string, timer: number): number[] {
  const out: number[] = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith('_rtt.csv'))) {
    for (const line of readFileSync(path.join(dir, f), 'utf8').split('\n').slice(1)) {
      const [, ms, rtd] = line.split(';');
      if (Number(rtd) === timer && Number.isFinite(Number(ms))) out.push(Number(ms));
    }
  }
  return out;
}
