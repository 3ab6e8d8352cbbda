/**
 * CPU of the ng control path in this process: bencode encode of an offer-shaped command, decode of an
 * answer-shaped reply, and whole NgClient round trips against an in-process UDP responder (which decodes nothing:
 * it echoes the cookie with a canned answer, so the figure is mostly the client's own work).
 *
 *     npx tsx bench/media/ng.bench.ts [round trips, default 50000]
 */
import { createSocket } from 'node:dgram';
import { NgClient, bdecode, bencode } from '../../media/index.js';

const SDP = [
  'v=0',
  'o=- 1545997027 1 IN IP4 198.51.100.1',
  's=tester',
  'c=IN IP4 198.51.100.1',
  't=0 0',
  'm=audio 2000 RTP/AVP 0 8 101',
  'a=rtpmap:0 PCMU/8000',
  'a=rtpmap:8 PCMA/8000',
  'a=rtpmap:101 telephone-event/8000',
  'a=fmtp:101 0-16',
  'a=sendrecv',
  'a=ptime:20',
  '',
].join('\r\n');

const OFFER = {
  command: 'offer',
  'call-id': '3c26700b3bfa-4b2a-8f2e-1f6c3e9d2a71@198.51.100.1',
  'from-tag': 'as6f7e8d9c',
  sdp: SDP,
  flags: ['trust-address', 'strict-source'],
  'transport-protocol': 'RTP/AVP',
  ICE: 'remove',
  replace: ['origin', 'session-connection'],
};
const ANSWER = { result: 'ok', sdp: SDP.replace(/198\.51\.100\.1/g, '203.0.113.7'), 'created-from': '127.0.0.1:5060' };
const ANSWER_BYTES = bencode(ANSWER);

function cpuUs(run: () => void): number {
  const before = process.cpuUsage();
  run();
  const d = process.cpuUsage(before);
  return d.user + d.system;
}

function micro(n: number): void {
  let bytes = 0;
  for (let i = 0; i < 2000; i++) bytes += bencode(OFFER).length + (bdecode(ANSWER_BYTES) as { sdp: string }).sdp.length;
  const enc = cpuUs(() => {
    for (let i = 0; i < n; i++) bytes += bencode(OFFER).length;
  });
  const dec = cpuUs(() => {
    for (let i = 0; i < n; i++) bytes += (bdecode(ANSWER_BYTES) as { sdp: string }).sdp.length;
  });
  console.log(`bencode offer (${bencode(OFFER).length} B): ${(enc / n).toFixed(2)} µs CPU each`);
  console.log(`bdecode answer (${ANSWER_BYTES.length} B): ${(dec / n).toFixed(2)} µs CPU each (${bytes > 0})`);
}

async function roundTrips(n: number): Promise<void> {
  const engine = createSocket('udp4');
  engine.on('message', (msg, rinfo) => {
    const space = msg.indexOf(0x20);
    engine.send([msg.subarray(0, space + 1), ANSWER_BYTES], rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => engine.bind(0, '127.0.0.1', resolve));
  const client = new NgClient({ host: '127.0.0.1', port: engine.address().port, maxInFlight: 64 });
  const run = async (count: number): Promise<void> => {
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next++ < count) await client.offer(OFFER);
    };
    await Promise.all(Array.from({ length: 32 }, worker));
  };
  await run(2000);
  const t0 = performance.now();
  const before = process.cpuUsage();
  await run(n);
  const d = process.cpuUsage(before);
  const wall = performance.now() - t0;
  console.log(
    `ng round trip (client + canned responder, 32 concurrent): ${((d.user + d.system) / n).toFixed(1)} µs CPU each, ` +
      `${Math.round(n / (wall / 1000))}/s`,
  );
  client.close();
  engine.close();
}

const n = Number(process.argv[2] ?? 50000);
micro(n * 4);
await roundTrips(n);
