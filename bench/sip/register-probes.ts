/**
 * What bench/sip/register.bench.ts watches in its own process besides SIPp's figures: each thread's CPU and the time
 * it waited for a core (Linux /proc/self/task/<tid>/schedstat: a busy main thread at 90 % of a core waits out every
 * other process on a 2-core box), the event loop's long stalls with what was going on during each (GC pauses, time
 * descheduled, and with a CPU profile the frames it ran), V8's heap sampling profile, and the CPU profile.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import inspector from 'node:inspector';
import { PerformanceObserver } from 'node:perf_hooks';

/** CPU time and run-queue wait of one thread, nanoseconds (schedstat), with its name (comm). */
export interface ThreadTimes {
  name: string;
  cpuNs: number;
  waitNs: number;
}

/** Every thread of this process, by tid. The main thread's tid is the pid. */
export function threadTimes(): Map<number, ThreadTimes> {
  const out = new Map<number, ThreadTimes>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const [cpu, wait] = readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ');
      const name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
      out.set(Number(tid), { name, cpuNs: Number(cpu), waitNs: Number(wait) });
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** The main thread's CPU and run-queue wait so far (ns). */
function mainTimes(): [number, number] {
  const [cpu, wait] = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ');
  return [Number(cpu), Number(wait)];
}

/** CPU ms between two readings: the main thread's (and its run-queue wait), and the other threads' by name. */
export function cpuByThread(
  before: Map<number, ThreadTimes>,
  after: Map<number, ThreadTimes>,
): { mainMs: number; mainWaitMs: number; others: Array<{ name: string; ms: number }> } {
  let mainMs = 0;
  let mainWaitMs = 0;
  const others = new Map<string, number>();
  for (const [tid, a] of after) {
    const b = before.get(tid) ?? { cpuNs: 0, waitNs: 0 };
    const ms = (a.cpuNs - b.cpuNs) / 1e6;
    if (tid === process.pid) {
      mainMs = ms;
      mainWaitMs = (a.waitNs - b.waitNs) / 1e6;
    } else others.set(a.name, (others.get(a.name) ?? 0) + ms);
  }
  const list = [...others].map(([name, ms]) => ({ name, ms })).sort((x, y) => y.ms - x.ms);
  return { mainMs, mainWaitMs, others: list };
}

/** One long event-loop stall and what happened during it. */
export interface Stall {
  /** performance.now() when the stall ended, ms. */
  endedAt: number;
  /** How late the watch's tick came, ms. */
  lateMs: number;
  /** GC pauses inside the stall, ms. */
  gcMs: number;
  /** The main thread waiting for a core meanwhile (descheduled), ms. */
  waitMs: number;
  /** The main thread on a core meanwhile, ms. */
  cpuMs: number;
}

/** GC pauses as they happen, and the total since the last reset. */
export class GcWatch {
  ms = 0;
  max = 0;
  /** [start, end] of recent pauses (performance.now() ms), oldest first; bounded. */
  readonly recent: Array<[number, number]> = [];

  constructor() {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        this.ms += e.duration;
        this.max = Math.max(this.max, e.duration);
        this.recent.push([e.startTime, e.startTime + e.duration]);
        if (this.recent.length > 4096) this.recent.splice(0, 2048);
      }
    }).observe({ entryTypes: ['gc'] });
  }

  reset(): void {
    this.ms = 0;
    this.max = 0;
  }

  /** GC pause time inside [from, to]. */
  within(from: number, to: number): number {
    let ms = 0;
    for (const [s, e] of this.recent) ms += Math.max(0, Math.min(e, to) - Math.max(s, from));
    return ms;
  }
}

/**
 * Ticks every `everyMs` and records each tick that came more than `thresholdMs` late, with the GC pauses and the
 * main thread's CPU and run-queue wait between the previous tick and this one.
 */
export class StallWatch {
  readonly stalls: Stall[] = [];
  readonly #timer: NodeJS.Timeout;

  constructor(gc: GcWatch, thresholdMs: number, everyMs = 5) {
    let last = performance.now();
    let [cpu0, wait0] = mainTimes();
    this.#timer = setInterval(() => {
      const now = performance.now();
      const [cpu, wait] = mainTimes();
      const late = now - last - everyMs;
      if (late > thresholdMs && this.stalls.length < 10_000)
        this.stalls.push({
          endedAt: now,
          lateMs: late,
          gcMs: gc.within(last, now),
          waitMs: (wait - wait0) / 1e6,
          cpuMs: (cpu - cpu0) / 1e6,
        });
      last = now;
      cpu0 = cpu;
      wait0 = wait;
    }, everyMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/** node's inspector in this process: CPU profile and heap sampling. */
export class Inspector {
  readonly #session = new inspector.Session();

  constructor() {
    this.#session.connect();
  }

  post(method: string, params?: object): Promise<any> {
    return new Promise((resolve, reject) =>
      this.#session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))),
    );
  }

  async startCpu(intervalUs = 200): Promise<void> {
    await this.post('Profiler.enable');
    await this.post('Profiler.setSamplingInterval', { interval: intervalUs });
    await this.post('Profiler.start');
  }

  async stopCpu(): Promise<CpuProfile> {
    return (await this.post('Profiler.stop')).profile as CpuProfile;
  }

  /**
   * Samples allocations every `intervalBytes`; objects collected meanwhile stay in the profile too, except, with
   * `promoted`, those a scavenge collected: the profile is then what lived long enough to reach the old generation
   * (what mark-compacts walk and free).
   */
  async startHeap(promoted = false, intervalBytes = 256 * 1024): Promise<void> {
    await this.post('HeapProfiler.enable');
    await this.post('HeapProfiler.startSampling', {
      samplingInterval: intervalBytes,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: !promoted,
    });
  }

  async stopHeap(): Promise<HeapProfile> {
    return (await this.post('HeapProfiler.stopSampling')).profile as HeapProfile;
  }
}

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

export interface HeapProfile {
  head: HeapNode;
}

const where = (f: CallFrame): string => {
  const url = f.url.replace(/^.*\/(node_modules|work\/main)\//, '$1/').replace(/^work\/main\//, '');
  return `${f.functionName || '(anonymous)'} ${url}${url ? ':' + (f.lineNumber + 1) : ''}`;
};

/** Writes the profile and prints the frames with the most self time, as a share of the busy (non-idle) time. */
export function printCpuProfile(p: CpuProfile, file: string, top = 20): void {
  writeFileSync(file, JSON.stringify(p));
  const frame = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const key = where(frame.get(id)!);
    self.set(key, (self.get(key) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  const idle = self.get('(idle) ') ?? 0;
  const busy = [...self.values()].reduce((a, b) => a + b, 0) - idle;
  console.log(
    `\nCPU profile of the steps after the first registrations (${file}): busy ${(busy / 1000).toFixed(0)} ms; top frames by self time:\n`,
  );
  console.log('| self % of busy | frame |');
  console.log('|---|---|');
  for (const [k, v] of [...self]
    .filter(([k]) => k !== '(idle) ')
    .sort((a, b) => b[1] - a[1])
    .slice(0, top))
    console.log(`| ${((100 * v) / busy).toFixed(1)} | \`${k}\` |`);
}

/** The frames that allocated the most (sampled), bytes per registration. */
export function printHeapProfile(p: HeapProfile, file: string, registrations: number, top = 25): void {
  writeFileSync(file, JSON.stringify(p));
  const self = new Map<string, number>();
  let total = 0;
  const walk = (n: HeapNode): void => {
    if (n.selfSize > 0) {
      const key = where(n.callFrame);
      self.set(key, (self.get(key) ?? 0) + n.selfSize);
      total += n.selfSize;
    }
    for (const c of n.children) walk(c);
  };
  walk(p.head);
  console.log(
    `\nallocation profile of the steps (${file}): ${(total / Math.max(1, registrations)).toFixed(0)} bytes sampled per registration; top frames:\n`,
  );
  console.log('| bytes/reg | % | frame |');
  console.log('|---|---|---|');
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`| ${(v / Math.max(1, registrations)).toFixed(0)} | ${((100 * v) / total).toFixed(1)} | \`${k}\` |`);
}

/** The stalls of a run, longest first, with the CPU profile's frames during each when there is one. */
export function printStalls(stalls: Stall[], profile: CpuProfile | undefined, top = 12): void {
  if (stalls.length === 0) return;
  const sum = (f: (s: Stall) => number) => stalls.reduce((n, s) => n + f(s), 0);
  console.log(
    `\nevent-loop stalls: ${stalls.length}, ${sum((s) => s.lateMs).toFixed(0)} ms late in all, of which GC ${sum((s) => s.gcMs).toFixed(0)} ms, main thread descheduled ${sum((s) => s.waitMs).toFixed(0)} ms, blocked ${sum((s) => Math.max(0, s.lateMs + 5 - s.cpuMs - s.waitMs)).toFixed(0)} ms; the longest:\n`,
  );
  // Blocked: neither running nor waiting for a core (asleep in a system call: a disk write, a lock).
  console.log(
    '| late ms | GC ms | descheduled ms | on CPU ms | blocked ms | frames with the most self time meanwhile |',
  );
  console.log('|---|---|---|---|---|---|');
  const offset = profile ? monotonicToPerf() : 0;
  for (const s of [...stalls].sort((a, b) => b.lateMs - a.lateMs).slice(0, top)) {
    const frames = profile ? framesBetween(profile, s.endedAt - s.lateMs - offset, s.endedAt - offset) : '';
    console.log(
      `| ${s.lateMs.toFixed(0)} | ${s.gcMs.toFixed(0)} | ${s.waitMs.toFixed(0)} | ${s.cpuMs.toFixed(0)} | ${Math.max(0, s.lateMs + 5 - s.cpuMs - s.waitMs).toFixed(0)} | ${frames} |`,
    );
  }
}

/** performance.now() minus the monotonic clock the CPU profile's timestamps use (ms). */
function monotonicToPerf(): number {
  return performance.now() - Number(process.hrtime.bigint() / 1000n) / 1000;
}

/** The top self frames of the profile's samples between two performance.now() times (shifted to monotonic). */
function framesBetween(p: CpuProfile, fromPerf: number, toPerf: number): string {
  const frame = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const from = fromPerf * 1000;
  const to = toPerf * 1000;
  const self = new Map<string, number>();
  let t = p.startTime;
  p.samples.forEach((id, i) => {
    t += p.timeDeltas[i] ?? 0;
    if (t < from || t > to) return;
    const key = where(frame.get(id)!);
    self.set(key, (self.get(key) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 4)
    .map(([k, v]) => `${(v / 1000).toFixed(0)} ms \`${k}\``)
    .join(', ');
}
