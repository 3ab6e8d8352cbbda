import assert from 'node:assert/strict';
import { HepSender } from '../../../sip/capture/hep-sender.js';
import { encodeHep3 } from '../../../sip/capture/hep.js';
import { SipCapture } from '../../../sip/capture/sip-capture.js';
import { SipLadder } from '../../../sip/capture/sip-ladder.js';
import { writePcap } from '../../../sip/capture/pcap-writer.js';
import { readPcapUdp } from '../../../media/pcap-reader.js';
import type { TappedMessage } from '../../../sip/stack/index.js';
import { decodeHep3 } from '../../support/hep-collector.js';
import { pino } from 'pino';
import { ConfigError, loadConfig } from '../../../config/index.js';

const invite = (callId: string, toTag = '') =>
  Buffer.from(
    `INVITE sip:+254700000001@192.0.2.1 SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.9;branch=z9hG4bK1\r\n` +
      `From: <sip:a@x>;tag=1\r\nTo: <sip:b@x>${toTag}\r\ni: ${callId}\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n`,
  );
const ok = (callId: string) =>
  Buffer.from(`SIP/2.0 200 OK\r\nCall-ID: ${callId}\r\nTo: <sip:b@x>;tag=9\r\nCSeq: 1 INVITE\r\n\r\n`);

function tapped(direction: 'in' | 'out', data: Buffer, at = Date.now()): TappedMessage {
  return {
    direction,
    transport: 'UDP',
    data,
    localAddress: '0.0.0.0',
    localPort: 5060,
    remoteAddress: '192.0.2.9',
    remotePort: 5070,
    at,
  };
}

describe('sip/capture', () => {
  it('a HEPv3 packet carries every chunk Homer reads, IPv4 and IPv6 (an IPv4-mapped end written as such)', () => {
    const payload = invite('abc@x');
    const at = 1_700_000_000_123.456;
    const v4 = decodeHep3(
      encodeHep3({
        ipProtocol: 17,
        srcAddress: '::ffff:192.0.2.1',
        srcPort: 5060,
        dstAddress: '198.51.100.7',
        dstPort: 5080,
        at,
        captureId: 4_000_000_001,
        payload,
        correlationId: 'call_1',
      }),
    );
    assert.deepEqual(
      { ...v4, types: undefined },
      {
        family: 2,
        ipProtocol: 17,
        src: '192.0.2.1',
        dst: '198.51.100.7',
        srcPort: 5060,
        dstPort: 5080,
        seconds: 1_700_000_000,
        micros: 123_456,
        protocolType: 1,
        captureId: 4_000_000_001,
        correlationId: 'call_1',
        payload: payload.toString(),
        types: undefined,
      },
    );
    assert.deepEqual(v4.types, [1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 17, 15]);
    const v6 = decodeHep3(
      encodeHep3({
        ipProtocol: 6,
        srcAddress: '2001:db8::1',
        srcPort: 5061,
        dstAddress: '192.0.2.1',
        dstPort: 5061,
        at,
        captureId: 1,
        payload,
      }),
    );
    assert.equal(v6.family, 10);
    assert.equal(v6.ipProtocol, 6);
    assert.equal(v6.src, '2001:db8:0:0:0:0:0:1');
    assert.equal(v6.dst, '0:0:0:0:0:ffff:c000:201');
    assert.equal(v6.correlationId, undefined);
    assert.ok(!v6.types.includes(17));
  });

  it('the HEP queue never waits: past its cap messages are dropped and counted, each enqueue costs microseconds', async () => {
    // A collector whose name never resolves: nothing leaves, the queue fills.
    const hep = new HepSender({
      host: 'collector.invalid',
      port: 9060,
      captureId: 1,
      queueLimit: 1000,
      logger: pino({ level: 'silent' }),
    });
    const m = tapped('in', invite('q@x'));
    const started = performance.now();
    for (let i = 0; i < 100_000; i++) hep.enqueue(m, () => undefined, '127.0.0.1');
    const perMessageUs = ((performance.now() - started) * 1000) / 100_000;
    assert.deepEqual(hep.figures(), { sent: 0, dropped: 99_000, queued: 1000 });
    assert.ok(perMessageUs < 5, `${perMessageUs.toFixed(2)} µs a message`);
    await hep.close();
    assert.equal(hep.figures().dropped, 100_000, 'what was queued at close is dropped too');
  });

  it('the ladder keeps at most its messages, bytes and age, the oldest going first, by Call-ID in order', () => {
    const ladder = new SipLadder({ maxMessages: 3, maxBytes: 10_000, maxAgeMs: 60_000 });
    const add = (callId: string, at: number) =>
      ladder.add({
        at,
        direction: 'in',
        transport: 'UDP',
        srcAddress: 'a',
        srcPort: 1,
        dstAddress: 'b',
        dstPort: 2,
        callId,
        startLine: `m${at}`,
        data: Buffer.alloc(100),
      });
    add('a', 1000);
    add('b', 1001);
    add('a', 1002);
    add('a', 1003); // the first of a goes
    assert.deepEqual(
      ladder.messages(['a', 'b'], 1003).map((m) => m.startLine),
      ['m1001', 'm1002', 'm1003'],
    );
    assert.deepEqual(
      ladder.messages(['a'], 61_003).map((m) => m.startLine),
      ['m1003'],
      'older than a minute: gone',
    );
    assert.equal(ladder.bytes, 100);
    const small = new SipLadder({ maxMessages: 100, maxBytes: 250, maxAgeMs: 60_000 });
    for (let i = 0; i < 5; i++) small.add({ ...ladder.messages(['a'], 61_003)[0]!, at: 2000 + i, callId: `c${i}` });
    assert.equal(small.size, 2, 'bounded by bytes');
  });

  it("a call's ladder holds its received leg and the leg sent while handling it, found by the call's sid", async () => {
    const capture = new SipCapture({ ladderMessages: 100, ladderMinutes: 60, advertisedAddress: '203.0.113.5' });
    // A received INVITE opens a call; what handles it (later, asynchronously) claims the call and sends its B leg.
    await new Promise<void>((resolve) => {
      setImmediate(() => {
        capture.tap(tapped('in', invite('a-leg@x')));
        void Promise.resolve().then(async () => {
          await new Promise((r) => setTimeout(r, 5));
          capture.claim('uuid-1', 'call_1');
          capture.tap(tapped('out', invite('b-leg@x')));
          resolve();
        });
      });
    });
    // Handled elsewhere, with no context: an INVITE of a call never seen does not join it; in-dialog ones do.
    await new Promise<void>((resolve) =>
      setImmediate(() => {
        capture.tap(tapped('out', invite('unrelated@x')));
        capture.tap(tapped('in', ok('b-leg@x')));
        capture.tap(tapped('in', invite('a-leg@x', ';tag=9'))); // a re-INVITE
        resolve();
      }),
    );
    const ladder = capture.ladder('call_1')!;
    assert.deepEqual(
      ladder.map((m) => [m.callId, m.direction, m.startLine.split(' ')[0]]),
      [
        ['a-leg@x', 'in', 'INVITE'],
        ['b-leg@x', 'out', 'INVITE'],
        ['b-leg@x', 'in', 'SIP/2.0'],
        ['a-leg@x', 'in', 'INVITE'],
      ],
    );
    assert.deepEqual(capture.ladder('uuid-1'), ladder);
    assert.equal(ladder[0]!.dstAddress, '203.0.113.5', 'a wildcard listening address is written as the advertised one');
    assert.equal(ladder[0]!.srcAddress, '192.0.2.9');
    assert.equal(capture.ladder('call_2'), undefined);
  });

  it('SIMU_HEP_URL is udp:HOST:PORT; anything else is refused naming the setting and the form', () => {
    const env = (url: string) => ({ SIMU_HEP_URL: url, SIMU_DATA_DIR: '/tmp/simu-capture-config' });
    assert.equal(loadConfig(env('udp:127.0.0.1:9060')).capture.hepUrl, 'udp:127.0.0.1:9060');
    assert.equal(loadConfig(env('udp:[2001:db8::1]:9060')).capture.hepUrl, 'udp:[2001:db8::1]:9060');
    assert.equal(loadConfig(env('udp:homer.example.net:9060')).capture.hepUrl, 'udp:homer.example.net:9060');
    for (const bad of [
      'http://homer:9060',
      'udp:homer',
      'udp:homer:0',
      'udp:homer:70000',
      'tcp:homer:9060',
      'udp::9060',
    ])
      assert.throws(
        () => loadConfig(env(bad)),
        (e: unknown) =>
          e instanceof ConfigError && /capture\.hepUrl/.test(e.message) && /udp:HOST:PORT/.test(e.message),
        bad,
      );
    assert.equal(loadConfig({ SIMU_DATA_DIR: '/tmp/simu-capture-config' }).capture.hepUrl, '', 'off by default');
  });

  it('a pcap of a ladder reads back as the same datagrams (IPv4 and IPv6)', () => {
    const messages = [
      { at: 1_700_000_000_001.5, srcAddress: '192.0.2.1', srcPort: 5060, dstAddress: '192.0.2.2', dstPort: 5070 },
      { at: 1_700_000_000_002, srcAddress: '2001:db8::2', srcPort: 5061, dstAddress: '2001:db8::1', dstPort: 5060 },
    ].map((m, i) => ({ ...m, data: invite(`p${i}@x`) }));
    const read = readPcapUdp(writePcap(messages));
    assert.deepEqual(
      read.map((p) => [p.srcAddress, p.srcPort, p.dstAddress, p.dstPort, p.payload.toString()]),
      [
        ['192.0.2.1', 5060, '192.0.2.2', 5070, messages[0]!.data.toString()],
        ['2001:db8:0:0:0:0:0:2', 5061, '2001:db8:0:0:0:0:0:1', 5060, messages[1]!.data.toString()],
      ],
    );
    assert.ok(Math.abs(read[0]!.time - 1_700_000_000.0015) < 1e-6);
  });
});
