import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SecurityGate, knexBanStore, liftBan, listBans } from '../../../sip/security/index.js';
import type { Db } from '../../../store/index.js';
import { sqliteDb } from '../../support/db.js';
import { silentLogger } from './helpers.js';
import { GatedUdpListener } from './udp-listener.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import { SippPeers } from '../../support/sipp.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const SCENARIO = path.join(here, 'fixtures', 'options.xml');
// The listener's port, and each SIPp's SIP, control and media ports, come from this run's block.
const LISTEN_PORT = nextPort();

const peers = new SippPeers();

/** One SIPp OPTIONS client, bounded in calls and time; its exit code is 0 only when every call got its 200. */
function sipp(opts: { ip: string; ua: string; rate: number; calls: number }): { exit: Promise<number | null> } {
  const args = [
    `127.0.0.1:${LISTEN_PORT}`,
    ...['-sf', SCENARIO, '-key', 'ua', opts.ua],
    ...['-i', opts.ip, '-p', String(nextPort()), '-cp', String(nextPort()), '-mp', String(nextPorts(4))],
    ...['-r', String(opts.rate), '-m', String(opts.calls)],
    ...['-nostdin', '-timeout', '20s'],
  ];
  return { exit: peers.run(args, 25_000).exited };
}

const figures = (line: string) => {
  if (process.env.SIMU_SECURITY_FIGURES) console.log(`      figure: ${line}`);
};

describe('sip/security: real traffic from SIPp through the gate (UDP on loopback)', function () {
  this.timeout(60_000);
  let db: Db;
  let gate: SecurityGate;
  let listener: GatedUdpListener;

  before(async () => {
    db = await sqliteDb.open();
    gate = new SecurityGate({
      store: knexBanStore(db),
      logger: silentLogger,
      settings: { flood: { maxRequests: 30, windowSeconds: 2, banSeconds: 600 }, pollSeconds: 1, sweepSeconds: 1 },
    });
    listener = new GatedUdpListener(gate);
    await listener.listen(LISTEN_PORT);
  });

  after(async () => {
    peers.killAll();
    await listener?.close();
    await gate?.close();
    await db?.destroy();
  });

  it('a 200/s OPTIONS flood from 127.0.0.1 is banned while a client on 127.0.0.2 keeps getting answers', async () => {
    const started = Date.now();
    const flood = sipp({ ip: '127.0.0.1', ua: 'flood-tester', rate: 200, calls: 400 });
    const good = sipp({ ip: '127.0.0.2', ua: 'Zoiper rv2.10', rate: 5, calls: 20 });
    let floodEnded = 0;
    const [floodCode, goodCode] = await Promise.all([flood.exit.finally(() => (floodEnded = Date.now())), good.exit]);
    figures(`flood + good client run took ${Date.now() - started} ms`);

    assert.equal(goodCode, 0, 'every one of the good client’s 20 OPTIONS got its 200');
    assert.ok((listener.answered.get('127.0.0.2') ?? 0) >= 20);
    assert.equal(listener.dropped.get('127.0.0.2') ?? 0, 0);

    assert.notEqual(floodCode, 0, 'the flooding client saw its calls fail');
    const floodAnswered = listener.answered.get('127.0.0.1') ?? 0;
    const floodDropped = listener.dropped.get('127.0.0.1') ?? 0;
    figures(`flood source: ${floodAnswered} answered, ${floodDropped} dropped (incl. retransmissions)`);
    assert.equal(floodAnswered, 30, 'answered up to the limit, then nothing');
    assert.ok(floodDropped >= 370, `dropped ${floodDropped}`);

    // The good client was answered while the flood was being dropped, not merely before or after it.
    const firstDrop = listener.log.find((e) => e.source === '127.0.0.1' && e.decision === 'drop')!.at;
    const goodDuringBan = listener.log.filter(
      (e) => e.source === '127.0.0.2' && e.decision === 'allow' && e.at > firstDrop && e.at < floodEnded,
    ).length;
    figures(`good client answers while the flood was banned and still sending: ${goodDuringBan}`);
    assert.ok(goodDuringBan >= 5, `only ${goodDuringBan} good answers during the ban`);

    const ban = gate.bans().find((b) => b.address === '127.0.0.1');
    assert.equal(ban?.reason, 'flood');
    await gate.flushBanWrites();
    const rows = await listBans(db);
    assert.deepEqual(
      rows.map((r) => [r.address, r.reason]),
      [['127.0.0.1', 'flood']],
    );
  });

  it('a scanner’s OPTIONS (User-Agent friendly-scanner) get no answer and its source is counted and banned', async () => {
    const scan = sipp({ ip: '127.0.0.3', ua: 'friendly-scanner', rate: 10, calls: 5 });
    assert.notEqual(await scan.exit, 0);
    assert.equal(listener.answered.get('127.0.0.3') ?? 0, 0);
    const counted = gate.scannerSources().find((s) => s.address === '127.0.0.3');
    assert.ok(counted && counted.count >= 5, JSON.stringify(counted));
    assert.equal(gate.bans().find((b) => b.address === '127.0.0.3')?.reason, 'scanner');
  });

  it('lifting the ban in the table (the CLI) lets 127.0.0.1 back in within the poll interval, server running', async () => {
    assert.equal(await liftBan(db, '127.0.0.1'), true);
    const t0 = Date.now();
    while (gate.bans().some((b) => b.address === '127.0.0.1')) {
      assert.ok(Date.now() - t0 < 5_000, 'the lift was not picked up within 5 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    figures(`lift took effect after ${Date.now() - t0} ms (pollSeconds 1)`);
    const again = sipp({ ip: '127.0.0.1', ua: 'Zoiper rv2.10', rate: 5, calls: 5 });
    assert.equal(await again.exit, 0, 'all five OPTIONS answered after the lift');
  });
});
