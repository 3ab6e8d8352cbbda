import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Logger } from '../config/index.js';
import { MediaError } from './errors.js';
import { NgClient } from './ng-client.js';
import { TypedEmitter } from '../kit/index.js';

/**
 * Runs one local rtpengine (userspace only: `--table=-1`, the kernel module is absent here) as our child, keeps
 * it alive, and says whether it answers.
 *
 * - The child is started through `setpriv --pdeathsig SIGKILL`, so the kernel kills it if our process dies by
 *   any means (even SIGKILL, where no 'exit' handler runs); we also kill it on process 'exit'. It stays in our
 *   process group, so a terminal's Ctrl-C reaches it too. A pid file in dataDir lets the next start kill a
 *   leftover from a previous run that still holds the ng port.
 * - An unexpected exit is followed by a restart after a backoff doubling from `backoffMinMs` to `backoffMaxMs`,
 *   reset once the engine answers again. Pending ng requests are rejected at once (MEDIA_ENGINE_GONE): the call
 *   state in the old engine is lost anyway, so waiting for a timeout would only slow the callers' cleanup.
 * - `healthy` is the result of the last ng ping (every `pingIntervalMs`). A running engine that misses
 *   `maxMissedPings` pings in a row is considered hung and killed, which leads to a restart.
 */
export interface RtpengineSupervisorOptions {
  ngPort: number;
  /** `--interface` value: an address (or NAME/ADDR, or ADDR!PUBLIC) media is relayed on. */
  interface: string;
  portMin: number;
  portMax: number;
  /** Pid file, recordings (pcaps/, metadata/) live under this directory. */
  dataDir: string;
  logger: Logger;
  /** Where rtpengine sends DTMF events as JSON over UDP (`--dtmf-log-dest`), if anyone listens. */
  dtmfLogPort?: number;
  binary?: string;
  pingIntervalMs?: number;
  startTimeoutMs?: number;
  backoffMinMs?: number;
  backoffMaxMs?: number;
  maxMissedPings?: number;
  extraArgs?: string[];
  /**
   * Where the engine keeps its calls (`--redis`, `IP:PORT/DB`), so an engine restarted after a crash restores them
   * and their media resumes on the same ports; undefined: no persistence, a crash loses every call it held.
   */
  redis?: string;
}

export type RtpengineSupervisorEvents = {
  ready: [pid: number];
  /** `at`: when the exit was seen (epoch ms), the moment the calls' media stopped. */
  exit: [info: { pid: number; code: number | null; signal: NodeJS.Signals | null; expected: boolean; at: number }];
  healthy: [];
  degraded: [reason: string];
};

export class RtpengineSupervisor extends TypedEmitter<RtpengineSupervisorEvents> {
  readonly #opts: Required<Omit<RtpengineSupervisorOptions, 'dtmfLogPort' | 'extraArgs' | 'redis'>> &
    Pick<RtpengineSupervisorOptions, 'dtmfLogPort' | 'extraArgs' | 'redis'>;
  readonly #log: Logger;
  #client: NgClient;
  #child: ChildProcess | undefined;
  #running = false;
  #healthy = false;
  #backoffMs: number;
  #missed = 0;
  #pingTimer: NodeJS.Timeout | undefined;
  #restartTimer: NodeJS.Timeout | undefined;
  #stopping: Promise<void> | undefined;
  #restarts = 0;
  readonly #onProcessExit = (): void => this.#killNow();

  constructor(opts: RtpengineSupervisorOptions) {
    super(opts.logger);
    this.#opts = {
      binary: '/usr/bin/rtpengine',
      pingIntervalMs: 2000,
      startTimeoutMs: 10_000,
      backoffMinMs: 500,
      backoffMaxMs: 5000,
      // A busy engine answers late (300 `play media` starts kept 10.5 from answering pings for seconds on two
      // cores), and killing it drops every call, so only ~20 s of silence counts as hung.
      maxMissedPings: 10,
      ...opts,
    };
    this.#log = opts.logger;
    this.#backoffMs = this.#opts.backoffMinMs;
    this.#client = this.#newClient();
  }

  #newClient(): NgClient {
    return new NgClient({ host: '127.0.0.1', port: this.#opts.ngPort, timeoutMs: 3000 });
  }

  /** The ng client of the supervised engine (replaced by each start()). */
  get client(): NgClient {
    return this.#client;
  }

  get ngPort(): number {
    return this.#opts.ngPort;
  }

  get healthy(): boolean {
    return this.#healthy;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Whether the engine keeps its calls in Redis (a restart restores them). */
  get persistent(): boolean {
    return this.#opts.redis !== undefined;
  }

  /** Restarts after an unexpected exit since this supervisor was made. */
  get restarts(): number {
    return this.#restarts;
  }

  get recordingDir(): string {
    return join(this.#opts.dataDir, 'rtpengine');
  }

  get pidFile(): string {
    return join(this.#opts.dataDir, 'rtpengine.pid');
  }

  /** Spawn the engine and resolve once it answers `ping` with `pong`. */
  async start(): Promise<void> {
    if (this.#running) return;
    if (this.#stopping) await this.#stopping;
    mkdirSync(this.recordingDir, { recursive: true });
    this.#killLeftover();
    this.#running = true;
    this.#client = this.#newClient();
    process.on('exit', this.#onProcessExit);
    this.#spawn();
    const deadline = Date.now() + this.#opts.startTimeoutMs;
    while (Date.now() < deadline && this.#running) {
      try {
        if (await this.#client.ping(250)) {
          this.#markHealthy();
          this.#schedulePing();
          return;
        }
      } catch {
        // not up yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    await this.stop();
    throw new MediaError('MEDIA_ENGINE_START_FAILED', `rtpengine did not answer ping on ${this.#opts.ngPort}`);
  }

  #args(): string[] {
    const o = this.#opts;
    const args = [
      '--config-file=none',
      '--foreground',
      '--table=-1',
      `--interface=${o.interface}`,
      `--listen-ng=127.0.0.1:${o.ngPort}`,
      `--port-min=${o.portMin}`,
      `--port-max=${o.portMax}`,
      `--recording-dir=${this.recordingDir}`,
      '--recording-method=pcap',
      `--pidfile=${this.pidFile}`,
      '--log-stderr',
      '--no-log-timestamps',
      // Free a call's ports as soon as it is deleted; the default keeps it 30 s, which looks like a leak.
      '--delete-delay=0',
    ];
    if (o.dtmfLogPort !== undefined) args.push(`--dtmf-log-dest=127.0.0.1:${o.dtmfLogPort}`);
    // A Redis that is down must not keep the engine from relaying new calls: it starts and retries without it.
    if (o.redis !== undefined) args.push(`--redis=${o.redis}`, '--no-redis-required');
    return [...args, ...(o.extraArgs ?? [])];
  }

  #spawn(): void {
    const child = spawn('setpriv', ['--pdeathsig', 'SIGKILL', '--', this.#opts.binary, ...this.#args()], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#child = child;
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => this.#log.debug({ rtpengine: line }, 'rtpengine'));
    }
    child.on('error', (err) => this.#log.warn({ err }, 'rtpengine spawn error'));
    child.on('exit', (code, signal) => this.#onChildExit(child, code, signal));
    this.#log.debug({ pid: child.pid, args: this.#args() }, 'rtpengine spawned');
  }

  #onChildExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#child !== child) return;
    this.#child = undefined;
    const expected = !this.#running;
    const at = Date.now();
    if (expected) {
      this.safeEmit('exit', { pid: child.pid ?? 0, code, signal, expected, at });
      return;
    }
    this.#log.warn({ code, signal, restartInMs: this.#backoffMs }, 'rtpengine exited unexpectedly');
    this.#client.rejectAll(new MediaError('MEDIA_ENGINE_GONE', `rtpengine exited (${signal ?? code})`));
    this.#markDegraded(`rtpengine exited (${signal ?? code})`);
    // Emitted once the engine is marked down: a listener waiting for it to come back sees it gone first.
    this.safeEmit('exit', { pid: child.pid ?? 0, code, signal, expected, at });
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      if (!this.#running) return;
      this.#restarts += 1;
      this.#spawn();
    }, this.#backoffMs);
    this.#backoffMs = Math.min(this.#backoffMs * 2, this.#opts.backoffMaxMs);
  }

  #schedulePing(): void {
    if (!this.#running) return;
    // While degraded, ping faster so a restarted engine is seen as soon as it answers.
    const delay = this.#healthy ? this.#opts.pingIntervalMs : Math.min(250, this.#opts.pingIntervalMs);
    this.#pingTimer = setTimeout(() => void this.#pingOnce(), delay);
  }

  async #pingOnce(): Promise<void> {
    this.#pingTimer = undefined;
    if (!this.#running) return;
    const ok = await this.#client.ping(Math.min(2000, this.#opts.pingIntervalMs)).catch(() => false);
    if (!this.#running) return;
    if (ok) {
      this.#missed = 0;
      this.#markHealthy();
    } else {
      this.#missed += 1;
      this.#markDegraded('ping failed');
      if (this.#missed >= this.#opts.maxMissedPings && this.#child) {
        this.#log.warn({ missed: this.#missed }, 'rtpengine not answering; killing it to restart');
        this.#missed = 0;
        this.#child.kill('SIGKILL');
      }
    }
    this.#schedulePing();
  }

  #markHealthy(): void {
    this.#backoffMs = this.#opts.backoffMinMs;
    if (this.#healthy) return;
    this.#healthy = true;
    this.safeEmit('ready', this.#child?.pid ?? 0);
    this.safeEmit('healthy');
  }

  #markDegraded(reason: string): void {
    if (!this.#healthy) return;
    this.#healthy = false;
    this.safeEmit('degraded', reason);
  }

  /** SIGTERM, then SIGKILL after `graceMs`. Safe to call twice and while a restart is pending. */
  stop(graceMs = 2000): Promise<void> {
    if (this.#stopping) return this.#stopping;
    if (!this.#running && !this.#child) return Promise.resolve();
    this.#stopping = this.#stop(graceMs).finally(() => {
      this.#stopping = undefined;
    });
    return this.#stopping;
  }

  async #stop(graceMs: number): Promise<void> {
    this.#running = false;
    this.#markDegraded('stopped');
    this.#healthy = false;
    clearTimeout(this.#pingTimer);
    clearTimeout(this.#restartTimer);
    const child = this.#child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    }
    this.#child = undefined;
    this.#client.close();
    process.off('exit', this.#onProcessExit);
    rmSync(this.pidFile, { force: true });
  }

  #killNow(): void {
    const pid = this.#child?.pid;
    if (pid === undefined) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  /** A previous run that died without cleaning up may have left an rtpengine on our ng port. */
  #killLeftover(): void {
    if (!existsSync(this.pidFile)) return;
    const pid = Number(readFileSync(this.pidFile, 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 1) return;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmdline.includes('rtpengine') && cmdline.includes(`:${this.#opts.ngPort}`)) {
        this.#log.warn({ pid }, 'killing leftover rtpengine from a previous run');
        process.kill(pid, 'SIGKILL');
      }
    } catch {
      // not running
    }
    rmSync(this.pidFile, { force: true });
  }
}
