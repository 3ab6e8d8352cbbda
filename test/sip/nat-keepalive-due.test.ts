/**
 * sip/nat/keep-alive.ts on a manual clock: each tick touches only the flows that are due (a timer wheel), every UDP
 * binding still gets one keep-alive per interval, and dead flows are still dropped after the allowed misses. The
 * mechanism against real phones is test/sip/nat-keepalive.test.ts.
 */
import assert from 'node:assert/strict';
import { LocationService, type Binding } from '../../sip/location.js';
import { NatKeepAlive } from '../../sip/nat/keep-alive.js';
import { ManualClock, type UserAgent } from '../../sip/stack/index.js';
import { quietLogger } from '../support/logger.js';

const INTERVAL = 25_000;

/** A user agent whose OPTIONS are answered (or, for the sources in `silent`, never). */
function fakeUa(silent: Set<number>) {
  const sent: Array<{ contact: string; port: number }> = [];
  const ua = {
    request(contact: string, opts: { proxy: { port: number } }) {
      sent.push({ contact, port: opts.proxy.port });
      return silent.has(opts.proxy.port) ? new Promise(() => {}) : Promise.resolve({ status: 200 });
    },
    sendKeepAlive: () => Promise.resolve(),
  };
  return { ua: ua as unknown as UserAgent, sent };
}

function binding(i: number, now: number, port = 20_000 + (i % 40_000)): Binding {
  return {
    accountId: 'acct',
    endUserId: `user-${i}`,
    extension: String(1000 + i),
    contact: `sip:${1000 + i}@10.0.0.1:${port}`,
    transport: 'UDP',
    sourceAddress: '10.0.0.1',
    sourcePort: port,
    flowId: 'udp',
    expiresAt: now + 3_600_000,
    registeredAt: now,
    tokenId: `t-${i}`,
    callId: `c-${i}`,
    cseq: 1,
  };
}

function setUp(silent = new Set<number>()) {
  const clock = new ManualClock(1_000_000);
  const location = new LocationService({ clock });
  const { ua, sent } = fakeUa(silent);
  const dropped: Binding[] = [];
  const nat = new NatKeepAlive({
    ua,
    location,
    clock,
    logger: quietLogger,
    settings: { intervalMs: INTERVAL, misses: 2 },
    onDropped: (_emptied, b) => dropped.push(b),
  });
  const register = (b: Binding) => {
    location.apply(b.accountId, b.extension, [b], []);
    nat.track(b);
  };
  return { clock, location, nat, sent, dropped, register };
}

const settle = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('sip/nat: keep-alives from a due-time wheel', () => {
  it('a tick looks only at the flows due: 10,000 bindings, registered over one interval, one keep-alive each per interval', async () => {
    const { clock, nat, sent, register } = setUp();
    nat.start();
    // 400 phones register in each second of the first 25 s.
    for (let s = 0; s < 25; s++) {
      for (let i = 0; i < 400; i++) register(binding(s * 400 + i, clock.now()));
      clock.advance(1000);
    }
    await settle();
    assert.equal(sent.length, 400, "only the first second's phones are due yet (one interval after they registered)");
    let most = 0;
    for (let s = 0; s < 50; s++) {
      const before = nat.stats.examined;
      clock.advance(1000);
      await settle();
      most = Math.max(most, nat.stats.examined - before);
    }
    // 75 s after the first registered: each phone at 25 and 50 s after it registered, the first second's at 75 s
    // too; and no tick looked at more than about a second's worth of them.
    assert.equal(nat.stats.options, 10_000 * 2 + 400);
    assert.equal(new Set(sent.map((x) => x.contact)).size, 10_000);
    assert.equal(nat.stats.answered, 10_000 * 2 + 400);
    assert.ok(most <= 800, `a tick looked at ${most} flows`);
    nat.close();
  });

  it('a binding gone is forgotten at its due time; one moved elsewhere keeps its keep-alives', async () => {
    const { clock, location, nat, sent, register } = setUp();
    nat.start();
    const gone = binding(1, clock.now());
    const moved = binding(2, clock.now());
    register(gone);
    register(moved);
    location.apply(gone.accountId, gone.extension, [], [gone.contact]); // unregistered (Expires: 0)
    const elsewhere = { ...moved, sourcePort: 40_123 };
    register(elsewhere);
    clock.advance(INTERVAL + 1000);
    await settle();
    assert.deepEqual(sent, [{ contact: moved.contact, port: 40_123 }]);
    clock.advance(INTERVAL);
    await settle();
    assert.equal(sent.length, 2);
    assert.equal(nat.stats.examined, 3, 'the unregistered flow was looked at once, then forgotten');
    nat.close();
  });

  it('a flow that stops answering is dropped after the allowed misses; the others stay', async () => {
    const silentPort = 41_000;
    const { clock, location, nat, dropped, register } = setUp(new Set([silentPort]));
    nat.start();
    const dead = binding(7, clock.now(), silentPort);
    const alive = binding(8, clock.now());
    register(dead);
    register(alive);
    for (let s = 0; s < 4 * 25; s++) {
      clock.advance(1000);
      await settle();
    }
    assert.deepEqual(
      dropped.map((b) => b.contact),
      [dead.contact],
    );
    assert.equal(location.get(dead.accountId, dead.extension, dead.contact), undefined);
    assert.ok(location.get(alive.accountId, alive.extension, alive.contact));
    assert.equal(nat.stats.dropped, 1);
    nat.close();
  });
});
