import assert from 'node:assert/strict';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startTestSwitch, runSipp } from './harness.js';

const OPTIONS = path.resolve(import.meta.dirname, '..', 'sip', 'security', 'fixtures', 'options.xml');

/** SIPp sending `count` OPTIONS at `rate`/s to the switch on 127.0.0.1:`to`, from `ip`:`port` (and `port`+1). */
function optionsFrom(o: {
  to: number;
  ua: string;
  ip: string;
  port: number;
  rate: number;
  count: number;
  timeout: string;
}) {
  return runSipp([
    `127.0.0.1:${o.to}`,
    '-sf',
    OPTIONS,
    '-key',
    'ua',
    o.ua,
    '-i',
    o.ip,
    '-p',
    String(o.port),
    '-cp',
    String(o.port + 1),
    '-r',
    String(o.rate),
    '-m',
    String(o.count),
    '-timeout',
    o.timeout,
  ]);
}

/**
 * Issue 10 "done when", on the real switch: a source flooding the SIP port is banned while the switch keeps
 * answering another source and stays healthy; the event-loop delay during the flood is reported.
 */
describe('e2e: a SIP flood against the switch', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;

  before(async () => {
    ctx = await startTestSwitch({ http: 21880, sip: 21865, ng: 21231, rtpMin: 22600, rtpMax: 22699 });
  });

  after(async () => {
    await ctx?.sw.stop();
  });

  it('bans the flooding address, keeps answering the other one, and health stays ok', async () => {
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const flood = optionsFrom({
      to: 21865,
      ua: 'flood-tester',
      ip: '127.0.0.1',
      port: 21866,
      rate: 200,
      count: 600,
      timeout: '20s',
    });
    await new Promise((r) => setTimeout(r, 500));
    const good = optionsFrom({
      to: 21865,
      ua: 'Zoiper rv2.10',
      ip: '127.0.0.2',
      port: 21868,
      rate: 5,
      count: 15,
      timeout: '20s',
    });
    const healths: number[] = [];
    const probe = setInterval(() => {
      void fetch(`${ctx.baseUrl}/api/health/`).then((r) => healths.push(r.status));
    }, 250);
    try {
      assert.equal(await good.exited, 0, `the well-behaved source got every answer:\n${good.output()}`);
      assert.notEqual(await flood.exited, 0, 'the flooding source stopped getting answers');
    } finally {
      clearInterval(probe);
      flood.kill();
      good.kill();
      loop.disable();
    }
    const bans = await ctx.db('ip_bans').where({ address: '127.0.0.1' });
    assert.equal(bans.length, 1, 'the flooding address is in the ban table (visible to `simu bans list`)');
    assert.equal(bans[0].reason, 'flood');
    assert.ok(healths.length > 5 && healths.every((s) => s === 200), `health during the flood: ${healths.join(',')}`);
    const p99 = loop.percentile(99) / 1e6;
    console.log(
      `      event-loop delay during the flood: p50 ${(loop.percentile(50) / 1e6).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
    );
    assert.ok(p99 < 1000, `the switch's event loop kept turning (p99 ${p99.toFixed(1)} ms)`);
  });
});

describe('e2e: the SIP gate thresholds come from the switch configuration', function () {
  this.timeout(30000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;

  before(async () => {
    ctx = await startTestSwitch({
      http: 21890,
      sip: 21875,
      ng: 21232,
      rtpMin: 22650,
      rtpMax: 22699,
      env: { SIMU_SIP_FLOOD_MAX_REQUESTS: '5', SIMU_SIP_BAN_SECONDS: '77' },
    });
  });

  after(async () => {
    await ctx?.sw.stop();
  });

  it('SIMU_SIP_FLOOD_MAX_REQUESTS=5 bans a source for SIMU_SIP_BAN_SECONDS after 20 requests the default allows', async () => {
    const burst = optionsFrom({
      to: 21875,
      ua: 'Zoiper rv2.10',
      ip: '127.0.0.3',
      port: 21876,
      rate: 50,
      count: 20,
      timeout: '10s',
    });
    await burst.exited;
    burst.kill();
    let ban: { reason: string; banned_at: string; expires_at: string } | undefined;
    for (let i = 0; i < 50 && !ban; i++) {
      ban = await ctx.db('ip_bans').where({ address: '127.0.0.3' }).first();
      if (!ban) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(ban, 'the source is banned (the default limit is 30 in 2 s)');
    assert.equal(ban.reason, 'flood');
    const seconds = (Date.parse(ban.expires_at) - Date.parse(ban.banned_at)) / 1000;
    assert.equal(Math.round(seconds), 77);
  });
});
