import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Db } from '../../../store/index.js';
import { nextPort, portRange } from '../../support/ports.js';
import { AccountServer, addCarrier, allocateSwitchPorts, createAccountWithDid, type SwitchPorts } from './harness.js';
import { freshPostgresStore, killSwitch, processEnv, startSwitch, type SwitchProcess } from './switch-process.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');
const run = promisify(execFile);

/** One switch process of a cluster: its id (`SIMU_NODE_ID`), its ports and, while it runs, its process. */
export interface ClusterNode {
  readonly id: string;
  readonly ports: SwitchPorts;
  readonly env: Record<string, string>;
  /** http://127.0.0.1:<its HTTP port> */
  readonly baseUrl: string;
  sw?: SwitchProcess;
}

export interface ClusterOptions {
  /** How many nodes (3). */
  size?: number;
  /** Settings every node gets (SIMU_* variables), besides its ports, store and id. */
  env?: Record<string, string>;
  /** RTP ports of each node's rtpengine (100: a few dozen calls at once). */
  rtpPorts?: number;
}

/** A row of `simu nodes --json`. */
export interface NodeListing {
  id: string;
  state: string;
  live_calls: number;
  gone_by: string | null;
}

/**
 * Several switch processes (nodes) on one new database of this run's throwaway PostgreSQL, each with its own HTTP
 * and SIP ports, data directory and rtpengine; one account server for their verb documents and status callbacks;
 * one carrier trunk at 127.0.0.1 (`carrierPort`, where a test's SIPp answers the calls the nodes place). The
 * store is migrated, and the trunk written, before any node starts; the nodes start one after another, as a
 * deploy must start them on a new store (each runs the migrations at start).
 */
export class Cluster {
  readonly server = new AccountServer();
  /** The carrier trunk's address: originated calls go to 127.0.0.1 at this port. */
  readonly carrierPort = nextPort();
  readonly nodes: ClusterNode[];
  url = '';
  db!: Db;

  private constructor(
    readonly name: string,
    readonly options: ClusterOptions,
  ) {
    this.nodes = Array.from({ length: options.size ?? 3 }, (_, i) => {
      const rtp = portRange(options.rtpPorts ?? 100);
      const ports = allocateSwitchPorts({ rtpMin: rtp.min, rtpMax: rtp.max });
      return { id: `${name}-${i + 1}`, ports, env: {}, baseUrl: `http://127.0.0.1:${ports.http}` };
    });
  }

  /** Starts the store, the account server and every node; on failure stops what started and throws. */
  static async start(name: string, options: ClusterOptions = {}): Promise<Cluster> {
    const c = new Cluster(name, options);
    try {
      await c.server.listen();
      ({ url: c.url, db: c.db } = await freshPostgresStore(`simu_${name.replace(/\W/g, '_')}`));
      await addCarrier(c.db, c.carrierPort);
      for (const n of c.nodes) await c.startNode(n);
    } catch (e) {
      await c.stop();
      throw e;
    }
    return c;
  }

  /** The n-th node, counted from 1. */
  node(n: number): ClusterNode {
    const node = this.nodes[n - 1];
    if (!node) throw new Error(`the cluster has no node ${n}`);
    return node;
  }

  /** Starts (or starts again, under the same id) a node that is not running. */
  async startNode(n: ClusterNode): Promise<SwitchProcess> {
    if (n.sw && n.sw.proc.exitCode === null && n.sw.proc.signalCode === null) return n.sw;
    const env = processEnv(n.ports, {
      SIMU_DATABASE_URL: this.url,
      SIMU_NODE_ID: n.id,
      ...this.options.env,
    });
    Object.assign(n.env, env);
    n.sw = await startSwitch(env);
    return n.sw;
  }

  /** SIGKILLs a node's process (its rtpengine is left running, as after a crash, until `stop`). */
  async kill(n: ClusterNode): Promise<void> {
    await n.sw?.stop('SIGKILL');
  }

  /** Resolves with a node's exit code once its process has exited. */
  exited(n: ClusterNode): Promise<number | null> {
    const proc = n.sw!.proc;
    return new Promise((resolve) =>
      proc.exitCode !== null || proc.signalCode !== null ? resolve(proc.exitCode) : proc.once('exit', resolve),
    );
  }

  /** The nodes as `simu nodes --json` lists them from the store. */
  async listing(): Promise<NodeListing[]> {
    const { stdout } = await run(path.join(ROOT, 'bin', 'simu'), ['nodes', '--json'], {
      env: { ...process.env, SIMU_DATABASE_URL: this.url },
    });
    return JSON.parse(stdout) as NodeListing[];
  }

  /**
   * An account with money, an API key and a DID, its status callbacks sent to the account server's /status, its
   * DID's calls answered with the document at `voicePath` (when given); caps raised unless `limits` says otherwise.
   */
  async account(
    did: string,
    o: { balanceCents?: number; voicePath?: string; maxConcurrent?: number; maxCps?: number } = {},
  ) {
    const acct = await createAccountWithDid(this.db, did, o.balanceCents);
    await this.db('accounts')
      .where({ id: acct.id })
      .update({
        webhook_status: this.server.url('/status'),
        max_concurrent_calls: o.maxConcurrent ?? 1000,
        max_cps: o.maxCps ?? 1000,
      });
    if (o.voicePath)
      await this.db('numbers')
        .where({ number: did })
        .update({ webhook_voice_inbound: this.server.url(o.voicePath) });
    return acct;
  }

  /** The status callbacks the account server received with `code` for the call `sid`. */
  callbacks(sid: string, code: string) {
    return this.server.requests.filter((q) => q.url === '/status' && q.json?.sid === sid && q.json?.code === code);
  }

  /** Kills every node and its rtpengine, closes the store and the account server. */
  async stop(): Promise<void> {
    for (const n of this.nodes) await killSwitch(n.sw, n.ports.ng);
    await this.db?.destroy();
    await this.server.close();
  }
}
