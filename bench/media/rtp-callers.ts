/**
 * The callers of the media benches (conference.bench.ts, streams.bench.ts), in a worker thread as on a real box
 * they are elsewhere: one UDP socket per caller on loopback sends PCMU RTP (160 bytes of a rough buzz: the benches
 * count packets, not tones) to its own target port, 50 packets a second on a drift-free 20 ms clock from `start()`,
 * and counts the packets that come back while it runs.
 */
import { Worker } from 'node:worker_threads';

const CALLERS = `
const { parentPort, workerData } = require('node:worker_threads');
const dgram = require('node:dgram');
const { performance } = require('node:perf_hooks');
const sockets = [];
let received = 0, sent = 0, ready = 0, running = false;
const payload = Buffer.alloc(160);
for (let i = 0; i < 160; i++) payload[i] = 0x80 + (i % 16);
for (const port of workerData.ports) {
  const s = dgram.createSocket('udp4');
  s.on('message', () => { if (running) received++; });
  s.bind(0, '127.0.0.1', () => { if (++ready === workerData.ports.length) parentPort.postMessage({ ready: sockets.map((x) => x.s.address().port) }); });
  sockets.push({ s, port, seq: 0, ts: 0, ssrc: (Math.random() * 0xffffffff) >>> 0 });
}
let start = 0, n = 0, timer;
function tick() {
  for (const p of sockets) {
    const pkt = Buffer.alloc(172);
    pkt[0] = 0x80; pkt[1] = 0;
    pkt.writeUInt16BE(p.seq = (p.seq + 1) & 0xffff, 2);
    pkt.writeUInt32BE(p.ts = (p.ts + 160) >>> 0, 4);
    pkt.writeUInt32BE(p.ssrc, 8);
    payload.copy(pkt, 12);
    p.s.send(pkt, p.port, '127.0.0.1');
    sent++;
  }
  n++;
  timer = setTimeout(tick, Math.max(0, start + n * 20 - performance.now()));
}
parentPort.on('message', (m) => {
  if (m === 'start') { running = true; start = performance.now(); tick(); }
  if (m === 'report') parentPort.postMessage({ sent, received });
  if (m === 'stop') { clearTimeout(timer); parentPort.postMessage({ sent, received }); }
  if (m === 'close') { running = false; for (const p of sockets) p.s.close(); parentPort.postMessage({}); }
});
`;

/** Packets sent and received so far. */
export interface CallerCounts {
  sent: number;
  received: number;
}

export interface RtpCallers {
  /** Each caller's own port, in the order of the targets. */
  ports: number[];
  /** The callers begin to speak. */
  start(): void;
  report(): Promise<CallerCounts>;
  /** The callers fall silent (still counting what comes back until closed). */
  stop(): Promise<CallerCounts>;
  /** Closes the sockets and ends the worker. */
  close(): Promise<void>;
}

/** One message to a worker and its answer. */
export function ask<T>(worker: Worker, msg: string): Promise<T> {
  return new Promise((resolve) => {
    worker.once('message', resolve);
    worker.postMessage(msg);
  });
}

/** A caller for each of `targets` (ports on 127.0.0.1), bound and ready, not yet speaking. */
export async function startRtpCallers(targets: number[]): Promise<RtpCallers> {
  const worker = new Worker(CALLERS, { eval: true, workerData: { ports: targets } });
  const ports = await new Promise<number[]>((r) => worker.once('message', (m: { ready: number[] }) => r(m.ready)));
  return {
    ports,
    start: () => worker.postMessage('start'),
    report: () => ask<CallerCounts>(worker, 'report'),
    stop: () => ask<CallerCounts>(worker, 'stop'),
    close: async () => {
      await ask(worker, 'close');
      await worker.terminate();
    },
  };
}
