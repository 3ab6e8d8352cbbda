import assert from 'node:assert/strict';
import { DEFAULT_SCANNER_USER_AGENTS, ScannerUserAgents } from '../../../sip/security/index.js';
import { makeGate, req } from './helpers.js';

describe('sip/security: scanners', () => {
  const scanners = new ScannerUserAgents();

  it('recognises the User-Agents of known scanning tools, whatever the case', () => {
    for (const ua of [
      'friendly-scanner',
      'sipvicious/0.3.4',
      'sipcli/v1.8',
      'SIP-Scan',
      'VaxSIPUserAgent/3.1',
      'iWar',
      'sundayddr',
      'SIPArmyKnife',
      'PortSIP VoIP SDK 11.2',
      'pplsip',
      'smap 0.6.0',
      'Cisco-SIPGateway/IOS-12.x',
    ]) {
      assert.equal(scanners.matches(ua), true, ua);
    }
  });

  it('lets honest phones through, including names that merely contain a short scanner name', () => {
    for (const ua of [
      'Zoiper rv2.10.16',
      'Grandstream GXP2170 1.0.11',
      'baresip v1.0.0',
      'Asmapphone 2',
      undefined,
      '',
    ]) {
      assert.equal(scanners.matches(ua), false, String(ua));
    }
    assert.ok(DEFAULT_SCANNER_USER_AGENTS.length > 10);
  });

  it('drops a scanner request without answering, counts it per source, and bans after banAfter', () => {
    const { gate } = makeGate({ settings: { scanners: { banAfter: 3 } } });
    const scan = req('198.51.100.7', { userAgent: 'friendly-scanner' });
    assert.equal(gate.inspect(scan), 'drop');
    assert.equal(gate.inspect(scan), 'drop');
    assert.equal(gate.bans().length, 0, 'two scanner requests do not ban yet');
    assert.equal(gate.inspect(scan), 'drop');
    assert.deepEqual(
      gate.bans().map((b) => [b.address, b.reason]),
      [['198.51.100.7', 'scanner']],
    );
    // Once banned, even an honest-looking request from that source is dropped.
    assert.equal(gate.inspect(req('198.51.100.7')), 'drop');
    assert.deepEqual(gate.scannerSources(), [{ address: '198.51.100.7', count: 3 }]);
    const st = gate.stats();
    assert.equal(st.dropped.scanner, 3);
    assert.equal(st.dropped.banned, 1);
    assert.equal(st.bansIssued.scanner, 1);
    // Another source is unaffected.
    assert.equal(gate.inspect(req('198.51.100.8')), 'allow');
  });

  it('with banAfter 0 only drops, never bans', () => {
    const { gate } = makeGate({ settings: { scanners: { banAfter: 0 } } });
    for (let i = 0; i < 50; i++) assert.equal(gate.inspect(req('198.51.100.9', { userAgent: 'sipcli/v2.2' })), 'drop');
    assert.equal(gate.bans().length, 0);
    assert.equal(gate.inspect(req('198.51.100.9')), 'allow');
  });

  it('trusts trunk addresses even when their User-Agent looks like a scanner (Cisco gateways)', () => {
    const { gate } = makeGate({ settings: { trustedAddresses: ['203.0.113.0/29'] } });
    assert.equal(gate.inspect(req('203.0.113.5', { userAgent: 'Cisco-SIPGateway/IOS-12.x' })), 'allow');
    assert.equal(gate.inspect(req('203.0.113.9', { userAgent: 'Cisco-SIPGateway/IOS-12.x' })), 'drop');
  });
});

describe('sip/security: floods', () => {
  it('allows 30 requests in 2 s from one source, bans it at the 31st, and drops it for 600 s', () => {
    const { gate, clock } = makeGate();
    const src = '192.0.2.10';
    for (let i = 0; i < 30; i++) {
      assert.equal(gate.inspect(req(src)), 'allow', `request ${i + 1}`);
      clock.advance(50);
    }
    assert.equal(gate.inspect(req(src)), 'drop');
    const [ban] = gate.bans();
    assert.equal(ban.address, src);
    assert.equal(ban.reason, 'flood');
    assert.equal(ban.expiresAt - ban.bannedAt, 600_000);
    clock.advance(599_000);
    assert.equal(gate.inspect(req(src)), 'drop', 'still banned just before the end');
    clock.advance(1_000);
    assert.equal(gate.inspect(req(src)), 'allow', 'allowed again once the ban ends');
    assert.equal(gate.stats().dropped.flood, 1);
    assert.equal(gate.stats().dropped.banned, 1);
  });

  it('never bans a steady sender below the rate (the window slides, no boundary burst)', () => {
    const { gate, clock } = makeGate();
    // 14 requests per second = 28 per 2 s, for five minutes.
    for (let i = 0; i < 14 * 300; i++) {
      assert.equal(gate.inspect(req('192.0.2.11')), 'allow');
      clock.advance(1000 / 14);
    }
    assert.equal(gate.bans().length, 0);
  });

  it('a burst straddling a fixed-window boundary is still caught', () => {
    const { gate, clock } = makeGate();
    clock.advance(1900);
    for (let i = 0; i < 20; i++) gate.inspect(req('192.0.2.12'));
    clock.advance(200); // a fixed 2 s window would have reset here
    const results = Array.from({ length: 11 }, () => gate.inspect(req('192.0.2.12')));
    assert.equal(results.at(-1), 'drop');
  });

  it('exempts trusted trunk addresses from flood bans', () => {
    const { gate } = makeGate({ settings: { trustedAddresses: ['203.0.113.1'] } });
    for (let i = 0; i < 1000; i++) assert.equal(gate.inspect(req('203.0.113.1', { method: 'INVITE' })), 'allow');
    assert.equal(gate.bans().length, 0);
  });

  it('folds IPv4-mapped IPv6 sources onto the IPv4 address', () => {
    const { gate } = makeGate({ settings: { flood: { maxRequests: 3 } } });
    gate.inspect(req('::ffff:192.0.2.13'));
    gate.inspect(req('192.0.2.13'));
    gate.inspect(req('::ffff:192.0.2.13'));
    assert.equal(gate.inspect(req('192.0.2.13')), 'drop');
    assert.equal(gate.inspect(req('::ffff:192.0.2.13')), 'drop');
  });

  it('admitSource drops a banned source before parsing and lets others through; IPv6 case does not matter', () => {
    const { gate } = makeGate({ settings: { flood: { maxRequests: 2 } } });
    assert.equal(gate.admitSource('2001:DB8::7'), 'allow', 'nothing banned yet');
    for (let i = 0; i < 3; i++) gate.inspect(req('2001:db8::7'));
    assert.equal(gate.bans()[0].address, '2001:db8::7');
    assert.equal(gate.admitSource('2001:DB8::7'), 'drop');
    assert.equal(gate.admitSource('2001:db8::8'), 'allow');
    const st = gate.stats();
    assert.equal(st.droppedBeforeParse, 1);
    assert.equal(st.dropped.banned, 1);
    assert.equal(gate.bans()[0].hits, 1);
  });

  it('keeps memory bounded under a flood from spoofed random sources, and sweeps idle counters', () => {
    const { gate, clock } = makeGate({ settings: { limits: { maxTrackedSources: 1000 } } });
    for (let i = 0; i < 20_000; i++) gate.inspect(req(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`));
    const st = gate.stats();
    assert.ok(st.trackedSources <= 1000, `tracked ${st.trackedSources}`);
    assert.equal(st.evictions, 19_000);
    clock.advance(10_000); // the sweep timer runs
    assert.equal(gate.stats().trackedSources, 0);
  });

  it('stays fast when a spoofed flood overflows the tables (no walk over the table per insertion)', function () {
    this.timeout(20_000);
    const { gate } = makeGate({ settings: { limits: { maxTrackedSources: 50_000 } } });
    let n = 0;
    const spoofed = (count: number): number => {
      const t0 = performance.now();
      for (let i = 0; i < count; i++, n++) {
        const x = (n * 2654435761) >>> 0;
        gate.inspect(req(`${x >>> 24}.${(x >> 16) & 255}.${(x >> 8) & 255}.${x & 255}`));
      }
      return (performance.now() - t0) / count;
    };
    const filling = spoofed(50_000);
    const overflowing = spoofed(150_000);
    // Compared with the same run's filling phase, so a busy machine slows both alike. Evicting the oldest entry one
    // at a time from a single Map made each overflowing insertion tens of times dearer.
    assert.ok(
      overflowing < filling * 4,
      `per request: ${(filling * 1e6).toFixed(0)} ns filling, ${(overflowing * 1e6).toFixed(0)} ns overflowing`,
    );
    assert.ok(gate.stats().trackedSources <= 50_000);
  });

  it('counts drops by method and transport, folding unknown tokens into "other"', () => {
    const { gate } = makeGate({ settings: { scanners: { banAfter: 0 } } });
    gate.inspect({ source: '192.0.2.14', transport: 'UDP', method: 'REGISTER', userAgent: 'sipvicious' });
    gate.inspect({ source: '192.0.2.14', transport: 'zzz', method: 'X'.repeat(40), userAgent: 'sipvicious' });
    const st = gate.stats();
    assert.deepEqual(st.droppedByMethod, { REGISTER: 1, other: 1 });
    assert.deepEqual(st.droppedByTransport, { udp: 1, other: 1 });
    assert.equal(st.inspected, 2);
  });

  it('ended bans are swept from memory', () => {
    const { gate, clock } = makeGate({ settings: { flood: { maxRequests: 1, banSeconds: 5 } } });
    gate.inspect(req('192.0.2.15'));
    gate.inspect(req('192.0.2.15'));
    assert.equal(gate.bans().length, 1);
    clock.advance(10_000);
    assert.equal(gate.stats().bansActive, 0);
  });
});
