/**
 * How many conference participants one box mixes: conferences of 10 on the media room's own mixer
 * (media/mixer/: one TickScheduler, a ConferenceMixer per conference, N-1 mixing in linear PCM, G.711 out),
 * each participant a real UDP socket pair on loopback. A worker thread plays the callers (rtp-callers.ts): one socket
 * per participant sends PCMU, 50 packets a second, to the participant's mixer socket, and counts what the mixer
 * sends back. The main thread does what the switch would do per participant: receive, decode into the
 * jitter ring, mix, encode, send.
 *
 * late % = packets the scheduler sent more than 20 ms after their due time (or skipped), over packets due.
 * CPU = the whole process (main thread + the callers' worker) over the step, % of one core; main ELU is the main
 * thread's event-loop utilisation. p99 tick jitter = 99th percentile of how late ticks started.
 * Before the steps, one conference of 10 is fed and ticked 50,000 times with no sockets, to show what a tick
 * costs alone and that it allocates nothing (heap after a full GC, run with --expose-gc).
 *
 *   node --expose-gc --import tsx bench/media/conference.bench.ts [--steps 30,100,200,300,400] [--seconds 10] [--size 10]
 */
import { createSocket, type Socket } from 'node:dgram';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { ConferenceMixer } from '../../media/mixer/conference-mixer.js';
import { TickScheduler } from '../../media/mixer/tick-scheduler.js';
import { startRtpCallers } from './rtp-callers.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}
const STEPS = arg('steps', '30,100,200,300,400').split(',').map(Number);
const SECONDS = Number(arg('seconds', '10'));
const SIZE = Number(arg('size', '10'));

interface Leg {
  socket: Socket;
  port: number;
}

async function bindLeg(): Promise<Leg> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  return { socket, port: socket.address().port };
}

async function step(participants: number) {
  const scheduler = new TickScheduler();
  const legs: Leg[] = [];
  const mixers: ConferenceMixer[] = [];
  for (let i = 0; i < participants; i += 1) legs.push(await bindLeg());
  const callers = await startRtpCallers(legs.map((l) => l.port));
  const callerPorts = callers.ports;
  for (let i = 0; i < participants; i += 1) {
    if (i % SIZE === 0) mixers.push(new ConferenceMixer());
    const mixer = mixers.at(-1)!;
    const leg = legs[i]!;
    const to = callerPorts[i]!;
    const p = mixer.add(`p${i}`, { send: (packet) => leg.socket.send(packet, to, '127.0.0.1') });
    leg.socket.on('message', (msg: Buffer) => p.hear(msg.subarray(12), 0));
  }
  for (const m of mixers) scheduler.add(m);
  callers.start();
  await new Promise((r) => setTimeout(r, 1000)); // warm up: rings primed, JIT settled
  scheduler.resetStats();
  const before = await callers.report();
  const cpu0 = process.cpuUsage();
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  const elapsed = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const elu = performance.eventLoopUtilization(elu0);
  const s = scheduler.stats();
  const after = await callers.stop();
  for (const m of mixers) scheduler.remove(m);
  await callers.close();
  for (const l of legs) l.socket.close();
  const due = s.packets + s.skippedTicks * participants;
  const receivedPct = (100 * (after.received - before.received)) / Math.max(1, s.packets);
  return {
    participants,
    conferences: mixers.length,
    latePct: (100 * s.latePackets) / Math.max(1, due),
    cpuPct: ((cpu.user + cpu.system) / 1000 / elapsed) * 100,
    eluPct: elu.utilization * 100,
    p99: s.lagP99Ms,
    max: s.lagMaxMs,
    workMean: s.workMeanMs,
    receivedPct,
  };
}

/** One conference of SIZE ticked alone: microseconds per tick and heap growth over `ticks` ticks. */
function tickAlone(ticks: number): { usPerTick: number; heapGrowth: number } {
  const mixer = new ConferenceMixer();
  const parts = Array.from({ length: SIZE }, (_, i) => mixer.add(`p${i}`, { send: () => undefined }));
  const payload = Buffer.alloc(160, 0x91);
  const run = (n: number) => {
    for (let t = 0; t < n; t += 1) {
      for (const p of parts) p.hear(payload, 0);
      mixer.tick();
    }
  };
  run(5000);
  global.gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  run(ticks);
  const elapsed = performance.now() - t0;
  global.gc?.();
  return { usPerTick: (elapsed * 1000) / ticks, heapGrowth: process.memoryUsage().heapUsed - heap0 };
}

const alone = tickAlone(50_000);
console.log(
  `one conference of ${SIZE} ticked alone: ${alone.usPerTick.toFixed(1)} us per tick (receive+mix+encode), ` +
    (global.gc
      ? `heap growth over 50,000 ticks ${alone.heapGrowth} bytes`
      : 'heap not measured (run with --expose-gc)'),
);
console.log(
  `load average at start: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} (the box has 2 cores, shared)`,
);
console.log(`conference mixing: conferences of ${SIZE}, ${SECONDS} s per step, ${SIZE - 1} voices summed per listener`);
console.log(
  'participants | conferences | late % | CPU % of a core | main ELU % | p99 tick jitter ms | max ms | mix ms/tick | ' +
    'mixed packets back at callers % | load avg (1 min) at end',
);
for (const n of STEPS) {
  const r = await step(n);
  console.log(
    [
      r.participants,
      r.conferences,
      r.latePct.toFixed(3),
      r.cpuPct.toFixed(1),
      r.eluPct.toFixed(1),
      r.p99.toFixed(1),
      r.max.toFixed(1),
      r.workMean.toFixed(3),
      r.receivedPct.toFixed(1),
      loadavg()[0]!.toFixed(1),
    ].join(' | '),
  );
}
process.exit(0);
