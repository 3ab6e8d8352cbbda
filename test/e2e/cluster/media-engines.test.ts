import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { METRICS_TOKEN_SETTING } from '../../../api/index.js';
import { NgClient } from '../../../media/index.js';
import { putSetting, sha256Hex } from '../../../store/index.js';
import { nextPort, portRange } from '../../support/ports.js';
import { eventually } from '../../support/wait.js';
import { useCarrierSwitch } from '../support/carrier-switch.js';
import { carrierCallsDid } from '../support/harness.js';

/**
 * Several media engines (SIMU_RTPENGINE_URLS): each is pinged, and new calls go only to those that answer. Two
 * rtpengines this test starts itself; one is SIGKILLed; the next 20 calls are all placed on the other and heard.
 */
class TestEngine {
  readonly ng = nextPort();
  readonly #ports = portRange(60);
  proc: ChildProcess | undefined;

  get address(): string {
    return `127.0.0.1:${this.ng}`;
  }

  async start(): Promise<void> {
    this.proc = spawn(
      'rtpengine',
      [
        '--config-file=none',
        '--foreground',
        '--table=-1',
        '--interface=127.0.0.1',
        `--listen-ng=127.0.0.1:${this.ng}`,
        `--port-min=${this.#ports.min}`,
        `--port-max=${this.#ports.max}`,
        '--log-stderr',
        '--delete-delay=0',
      ],
      { stdio: 'ignore' },
    );
    const client = new NgClient({ host: '127.0.0.1', port: this.ng, timeoutMs: 300, retransmitMs: 100 });
    try {
      await eventually(() => client.ping(300).catch(() => false), `rtpengine on ${this.ng}`, 10000);
    } finally {
      client.close();
    }
  }

  kill(): void {
    this.proc?.kill('SIGKILL');
  }
}

const DID = '+254711400001';
const TOKEN = 'mt_engines_test_token';

describe('e2e: several media engines, one killed', function () {
  this.timeout(90000);
  const engines = [new TestEngine(), new TestEngine()];
  before(() => Promise.all(engines.map((e) => e.start())));
  after(() => engines.forEach((e) => e.kill()));
  const t = useCarrierSwitch({
    did: DID,
    env: { SIMU_RTPENGINE_URLS: engines.map((e) => e.address).join(',') },
  });

  /** Per engine, one of the switch's /metrics figures. */
  async function figure(name: string): Promise<Map<string, number>> {
    const res = await fetch(`${t.ctx.baseUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const text = await res.text();
    const out = new Map<string, number>();
    for (const m of text.matchAll(new RegExp(`^${name}\\{engine="([^"]+)"\\} (\\S+)$`, 'gm'))) {
      out.set(m[1]!, Number(m[2]));
    }
    return out;
  }

  it('after one engine is killed, the next 20 calls are all placed on the other and heard', async () => {
    await putSetting(t.ctx.db, METRICS_TOKEN_SETTING, sha256Hex(TOKEN));
    const [dead, alive] = engines as [TestEngine, TestEngine];
    t.server.verbs('/in', '<Response><Say>Hello from the engine test.</Say><Hangup/></Response>');
    await t.setInboundUrl(t.server.url('/in'));
    assert.deepEqual([...(await figure('simu_rtpengine_engine_up')).values()], [1, 1], 'both engines up');

    dead.kill();
    // The switch sees it down at its next ping (every 2 s) and says so on /metrics.
    await eventually(
      async () => (await figure('simu_rtpengine_engine_up')).get(dead.address) === 0,
      'engine down',
      6000,
    );
    const before = await figure('simu_rtpengine_calls_placed');

    t.sipp = carrierCallsDid({
      sip: t.ports.sip,
      did: DID.slice(1),
      port: t.callerPort,
      sink: t.sinkPort,
      calls: 20,
      extra: ['-r', '5'],
    });
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const after = await figure('simu_rtpengine_calls_placed');
    assert.equal((after.get(alive.address) ?? 0) - (before.get(alive.address) ?? 0), 20, 'all 20 on the live engine');
    assert.equal(after.get(dead.address), before.get(dead.address), 'none on the dead one');
    await eventually(
      () => t.server.statusEvents().filter((c) => c === 'CALL.0300').length >= 20,
      'CALL.0300 x20',
      10000,
    );
    // Every call heard its Say (about 1.5 s of speech each, all aimed at the one sink).
    assert.ok(t.sink.speechSeconds() >= 20 * 1, `heard ${t.sink.speechSeconds()} s of speech over 20 calls`);
  });
});
