import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import type { Logger } from '../config/index.js';
import { MediaError } from './errors.js';

/**
 * A local redis-server, our child, where the supervised rtpengine keeps its calls (`--redis`) so that an engine
 * restarted after a crash restores them. Like the engine it is started through `setpriv --pdeathsig SIGKILL`
 * (it dies with us), listens on 127.0.0.1 only, and is restarted after an unexpected exit. It keeps nothing on
 * disk: the calls it holds die with this process anyway.
 */
export interface RedisSupervisorOptions {
  /** Its working directory is `<dataDir>/redis`. */
  dataDir: string;
  logger: Logger;
  /** TCP port on 127.0.0.1; default: one the kernel hands out free at start. */
  port?: number;
  binary?: string;
  startTimeoutMs?: number;
  restartDelayMs?: number;
}

export class RedisSupervisor {
  readonly #o: RedisSupervisorOptions;
  readonly #log: Logger;
  #port: number | undefined;
  #child: ChildProcess | undefined;
  #running = false;
  #restartTimer: NodeJS.Timeout | undefined;
  #restarts = 0;
  readonly #onProcessExit = (): void => {
    if (this.#child?.pid) process.kill(this.#child.pid, 'SIGKILL');
  };

  constructor(opts: RedisSupervisorOptions) {
    this.#o = opts;
    this.#log = opts.logger;
    this.#port = opts.port;
  }

  /** `IP:PORT/DB` as rtpengine's `--redis` takes it (database 0). */
  get address(): string {
    return `127.0.0.1:${this.#port ?? 0}/0`;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get restarts(): number {
    return this.#restarts;
  }

  /** Spawn redis-server and resolve once it answers PING. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#port ??= await freePort();
    mkdirSync(join(this.#o.dataDir, 'redis'), { recursive: true });
    this.#running = true;
    process.on('exit', this.#onProcessExit);
    this.#spawn();
    const deadline = Date.now() + (this.#o.startTimeoutMs ?? 5000);
    while (Date.now() < deadline) {
      if (await ping(this.#port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    await this.stop();
    throw new MediaError('MEDIA_ENGINE_START_FAILED', `redis-server did not answer PING on ${this.#port}`);
  }

  #spawn(): void {
    const args = [
      '--port',
      String(this.#port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      join(this.#o.dataDir, 'redis'),
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
    ];
    const binary = this.#o.binary ?? 'redis-server';
    const child = spawn('setpriv', ['--pdeathsig', 'SIGKILL', '--', binary, ...args], { stdio: 'ignore' });
    this.#child = child;
    child.on('error', (err) => this.#log.warn({ err }, 'redis-server spawn error'));
    child.on('exit', (code, signal) => {
      if (this.#child !== child) return;
      this.#child = undefined;
      if (!this.#running) return;
      this.#log.warn({ code, signal }, 'redis-server exited unexpectedly; restarting it');
      this.#restartTimer = setTimeout(() => {
        this.#restartTimer = undefined;
        if (!this.#running) return;
        this.#restarts += 1;
        this.#spawn();
      }, this.#o.restartDelayMs ?? 500);
    });
  }

  /** SIGTERM and wait for the exit. Safe twice. */
  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#restartTimer);
    process.off('exit', this.#onProcessExit);
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
  }
}

/** A TCP port on 127.0.0.1 free now (the kernel's pick). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Whether a Redis on 127.0.0.1:`port` answers PING with PONG (RESP inline command). */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

/**
 * The `--redis` of the local engine from the setting (config `rtpengine.redis`): `off`; an operator's Redis as
 * `IP:PORT/DB`; or `auto`, a RedisSupervisor of ours when redis-server is installed. Without one the feature is
 * off, and the log says so once: a crash of the engine then ends its calls (END.0502).
 */
export async function startCallPersistence(
  setting: string,
  o: { dataDir: string; logger: Logger; binary?: string },
): Promise<{ redis?: string; supervisor?: RedisSupervisor }> {
  const off = (why: string): Record<string, never> => {
    o.logger.warn(`rtpengine call persistence off (${why}): calls on an engine that dies are ended, END.0502`);
    return {};
  };
  if (setting === 'off') return off('rtpengine.redis is off');
  if (setting !== 'auto') return { redis: setting };
  const binary = o.binary ?? 'redis-server';
  if (!(await runs(binary))) return off(`${binary} is not installed`);
  const supervisor = new RedisSupervisor({ dataDir: o.dataDir, logger: o.logger, binary });
  try {
    await supervisor.start();
  } catch (err) {
    return off(`redis-server did not start: ${(err as Error).message}`);
  }
  return { redis: supervisor.address, supervisor };
}

function runs(binary: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(binary, ['--version'], { stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
  });
}
