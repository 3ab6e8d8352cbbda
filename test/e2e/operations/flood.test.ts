import assert from 'node:assert/strict';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startTestSwitch, runSipp, allocateSwitchPorts } from '../support/harness.js';
import { nextPorts } from '../../support/ports.js';

const FLOOD = allocateSwitchPorts();
const GATE = allocateSwitchPorts();
const FLOODER = nextPorts(2); // SIPp signalling, then its control port
const GOOD_SOURCE = nextPorts(2);
const BURST_SOURCE = nextPorts(2);

const OPTIONS = path.resolve(import.meta.dirname, '..', '..', 'sip', 'security', 'fixtures', 'options.xml');

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
    ctx = await startTestSwitch(FLOOD);
  });

  after(async () => {
    await ctx?.sw.stop();
  });

  it('bans the flooding address, keeps answering the other one, and health stays ok', async () => {
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const flood = optionsFrom({
      to: FLOOD.sip,
      ua: 'flood-tester',
      ip: '127.0.0.1',
      port: FLOODER,
      rate: 200,
      count: 600,
      timeout: '20s',
    });
    await new Promise((r) => setTimeout(r, 500));
    const good = optionsFrom({
      to: FLOOD.sip,
      ua: 'Zoiper rv2.10',
      ip: '127.0.0.2',
      port: GOOD_SOURCE,
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
      ...GATE,
      env: { SIMU_SIP_FLOOD_MAX_REQUESTS: '5', SIMU_SIP_BAN_SECONDS: '77' },
    });
  });

  after(async () => {
    await ctx?.sw.stop();
  });

  it('SIMU_SIP_FLOOD_MAX_REQUESTS=5 bans a source for SIMU_SIP_BAN_SECONDS after 20 requests the default allows', async () => {
    const burst = optionsFrom({
      to: GATE.sip,
      ua: 'Zoiper rv2.10',
      ip: '127.0.0.3',
      port: BURST_SOURCE,
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
