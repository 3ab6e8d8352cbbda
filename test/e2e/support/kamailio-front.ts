import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { eventually } from '../../support/wait.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');
const run = promisify(execFile);

export interface KamailioFrontOptions {
  /** The address it listens on, UDP and TCP (not the carriers' or the phones': the nodes must tell them apart). */
  host: string;
  port: number;
  /** The nodes' SIP ports on 127.0.0.1: its dispatcher set. */
  nodePorts: readonly number[];
  /** Its OPTIONS probe interval (s; 1). */
  probeSeconds?: number;
  /** Worker processes per transport (the configuration's CHILDREN; 2). */
  children?: number;
}

/**
 * Kamailio with the repository's configuration (deploy/kamailio/kamailio.cfg) in front of nodes on 127.0.0.1, as
 * an operator runs it: its dispatcher list and control socket in a folder of its own, its output kept.
 */
export class KamailioFront {
  readonly dir = mkdtempSync(path.join(os.tmpdir(), 'simu-kamailio-'));
  #proc: ChildProcess | undefined;
  #log = '';

  constructor(readonly o: KamailioFrontSettings) {}

  /** Starts it and waits until its probes hold every node active. */
  static async start(o: KamailioFrontOptions): Promise<KamailioFront> {
    const front = new KamailioFront({ probeSeconds: 1, children: 2, ...o });
    front.#spawn();
    try {
      await eventually(
        async () => (await front.activeNodes()).length === o.nodePorts.length,
        `the front probes ${o.nodePorts.length} nodes:\n${front.#log}`,
        15000,
      );
    } catch (e) {
      front.stop();
      throw e;
    }
    return front;
  }

  get log(): string {
    return this.#log;
  }

  /** Its main process and workers (one process group). */
  get pid(): number | undefined {
    return this.#proc?.pid;
  }

  #spawn(): void {
    const list = path.join(this.dir, 'nodes.list');
    writeFileSync(list, this.o.nodePorts.map((p) => `1 sip:127.0.0.1:${p} 0 0\n`).join(''));
    const at = `${this.o.host}:${this.o.port}`;
    this.#proc = spawn(
      'kamailio',
      [
        ...['-f', path.join(ROOT, 'deploy', 'kamailio', 'kamailio.cfg'), '-DD', '-E', '-Y', this.dir],
        ...['-A', `LISTEN_UDP=udp:${at}`, '-A', `LISTEN_TCP=tcp:${at}`],
        ...['-A', `DS_LIST="${list}"`, '-A', `CTL_SOCKET="unix:${path.join(this.dir, 'ctl')}"`],
        ...['-A', `DS_PING_SECONDS=${this.o.probeSeconds}`, '-A', `CHILDREN=${this.o.children}`],
        ...['-m', '128', '-M', '16'],
      ],
      // Its own process group: Kamailio forks its workers, and a SIGKILL to the main process alone leaves them.
      { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    this.#proc.stdout!.on('data', (d) => (this.#log += d));
    this.#proc.stderr!.on('data', (d) => (this.#log += d));
    process.once('exit', () => this.stop());
  }

  /** The nodes (their SIP ports) its dispatcher holds active. */
  async activeNodes(): Promise<number[]> {
    const { stdout } = await this.rpc('dispatcher.list').catch(() => ({ stdout: '' }));
    const out: number[] = [];
    for (const m of stdout.matchAll(/URI: sip:127\.0\.0\.1:(\d+)\s+FLAGS: (\w+)/g))
      if (m[2]!.startsWith('A')) out.push(Number(m[1]));
    return out;
  }

  /** One command on its control socket (kamcmd). */
  rpc(...args: string[]): Promise<{ stdout: string }> {
    return run('kamcmd', ['-s', `unix:${path.join(this.dir, 'ctl')}`, ...args]);
  }

  /** The PIDs of its processes (main and workers). */
  pids(): number[] {
    const pid = this.#proc?.pid;
    if (pid === undefined) return [];
    return processGroup(pid);
  }

  /** SIGKILLs its process group; safe when already stopped. */
  stop(): void {
    if (this.#proc?.pid !== undefined) {
      try {
        process.kill(-this.#proc.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

type KamailioFrontSettings = Required<KamailioFrontOptions>;

/** The processes of the group `pgid` leads, read from /proc/<pid>/stat. */
function processGroup(pgid: number): number[] {
  const out: number[] = [];
  for (const name of readdirNumbers('/proc')) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid) out.push(name);
    } catch {
      // it exited meanwhile
    }
  }
  return out;
}

function readdirNumbers(dir: string): number[] {
  return readdirSync(dir)
    .filter((n) => /^\d+$/.test(n))
    .map(Number);
}
