import type { Logger } from '../config/index.js';
import { MediaError } from './errors.js';
import { NgClient } from './ng-client.js';
import type { RtpengineSupervisor } from './rtpengine-supervisor.js';
import { TypedEmitter } from '../kit/index.js';

/**
 * Which rtpengine a new call goes to. With `config.rtpengine.urls` set we use those external engines, one per
 * call in round robin, skipping those whose last ping failed (each is pinged every `pingIntervalMs`: per-engine
 * health, as trunks have); otherwise the supervised local engine. A call must stay on the engine that anchored it
 * (its state lives there), so the caller keeps the returned client for the life of the call.
 */
export interface MediaEngine {
  readonly address: string;
  readonly client: NgClient;
  readonly healthy: boolean;
}

/** What the operator sees of one engine (health endpoint, staff stream, /metrics, the console). */
export interface MediaEngineStatus {
  address: string;
  healthy: boolean;
  /** true: it keeps its calls in Redis; false: it does not; undefined: unknown (an external engine). */
  persistent: boolean | undefined;
  /** Times it was seen lost (exited, or stopped answering its ping). */
  losses: number;
  /** Times the supervisor restarted it (the local engine). */
  restarts: number;
  /** New calls placed on it. */
  placed: number;
}

class EngineEntry implements MediaEngine {
  healthy = true;
  losses = 0;
  placed = 0;
  constructor(
    readonly client: NgClient,
    readonly persistent: boolean | undefined,
  ) {}
  get address(): string {
    return this.client.address;
  }
}

export function parseEngineUrl(url: string): { host: string; port: number } {
  const trimmed = url.trim().replace(/^udp:\/\//, '');
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(trimmed) ?? /^([^:]+):(\d+)$/.exec(trimmed);
  if (!m || !m[1] || !m[2]) throw new MediaError('MEDIA_NO_ENGINE', `bad rtpengine address "${url}" (want host:port)`);
  return { host: m[1], port: Number(m[2]) };
}

/**
 * 'engine-lost': an engine died (the local one exited unexpectedly) or stopped answering its ping (an external
 * one); `at` is when that was seen (epoch ms), the moment its calls' media stopped. 'engine-up': it answers
 * again (a call it held may have been restored). 'engine-state': any change of an engine's status.
 */
export type MediaEnginesEvents = {
  'engine-lost': [address: string, at: number];
  'engine-up': [address: string];
  'engine-state': [status: MediaEngineStatus];
};

export const LOCAL_ENGINE_ADDRESS = 'local';

export class MediaEngines extends TypedEmitter<MediaEnginesEvents> {
  readonly #external: EngineEntry[];
  readonly #local: RtpengineSupervisor | undefined;
  readonly #localEntry: { losses: number; placed: number } = { losses: 0, placed: 0 };
  readonly #log: Logger | undefined;
  readonly #pingIntervalMs: number;
  #next = 0;
  #pingTimer: NodeJS.Timeout | undefined;

  constructor(opts: {
    urls: string[];
    local?: RtpengineSupervisor;
    logger?: Logger;
    pingIntervalMs?: number;
    /** Whether the external engines keep their calls in Redis (undefined: not known here). */
    externalPersistent?: boolean;
  }) {
    super(opts.logger);
    this.#external = opts.urls
      .filter((u) => u.trim() !== '')
      .map((u) => new EngineEntry(new NgClient(parseEngineUrl(u)), opts.externalPersistent));
    this.#local = this.#external.length === 0 ? opts.local : undefined;
    if (this.#external.length === 0 && !opts.local) {
      throw new MediaError('MEDIA_NO_ENGINE', 'no rtpengine urls configured and no local supervisor given');
    }
    const local = this.#local;
    local?.on('exit', ({ expected, at }) => {
      if (expected) return;
      this.#localEntry.losses += 1;
      this.safeEmit('engine-lost', LOCAL_ENGINE_ADDRESS, at);
      this.safeEmit('engine-state', this.#statusOfLocal(local));
    });
    local?.on('healthy', () => {
      this.safeEmit('engine-up', LOCAL_ENGINE_ADDRESS);
      this.safeEmit('engine-state', this.#statusOfLocal(local));
    });
    this.#log = opts.logger;
    this.#pingIntervalMs = opts.pingIntervalMs ?? 2000;
  }

  get usesExternal(): boolean {
    return this.#external.length > 0;
  }

  /** Start pinging the external engines (the local supervisor pings its own). */
  async start(): Promise<void> {
    if (this.#external.length === 0 || this.#pingTimer) return;
    await this.#pingAll();
    const loop = (): void => {
      this.#pingTimer = setTimeout(() => void this.#pingAll().then(loop), this.#pingIntervalMs);
      this.#pingTimer.unref();
    };
    loop();
  }

  async #pingAll(): Promise<void> {
    await Promise.all(
      this.#external.map(async (e) => {
        const sent = Date.now();
        const healthy = await e.client.ping(Math.min(1000, this.#pingIntervalMs)).catch(() => false);
        if (healthy === e.healthy) return;
        e.healthy = healthy;
        this.#log?.warn({ engine: e.address, healthy }, 'rtpengine health changed');
        if (!healthy) {
          e.losses += 1;
          // Nothing in flight will be answered: its callers learn it now rather than at their deadlines.
          e.client.rejectAll(new MediaError('MEDIA_ENGINE_GONE', `rtpengine ${e.address} stopped answering`));
          this.safeEmit('engine-lost', e.address, sent);
        } else {
          this.safeEmit('engine-up', e.address);
        }
        this.safeEmit('engine-state', this.#statusOf(e));
      }),
    );
  }

  /** Every engine and its health, for the health endpoint. */
  list(): MediaEngine[] {
    if (this.#local) {
      const local = this.#local;
      return [{ address: LOCAL_ENGINE_ADDRESS, client: local.client, healthy: local.healthy }];
    }
    return [...this.#external];
  }

  /** Every engine as the operator sees it. */
  status(): MediaEngineStatus[] {
    if (this.#local) return [this.#statusOfLocal(this.#local)];
    return this.#external.map((e) => this.#statusOf(e));
  }

  #statusOf(e: EngineEntry): MediaEngineStatus {
    const { address, healthy, persistent, losses, placed } = e;
    return { address, healthy, persistent, losses, restarts: 0, placed };
  }

  #statusOfLocal(local: RtpengineSupervisor): MediaEngineStatus {
    return {
      address: LOCAL_ENGINE_ADDRESS,
      healthy: local.healthy,
      persistent: local.persistent,
      losses: this.#localEntry.losses,
      restarts: local.restarts,
      placed: this.#localEntry.placed,
    };
  }

  /** Whether the engine at `address` restores its calls after a restart (undefined: not known). */
  persistent(address: string): boolean | undefined {
    if (this.#local) return address === LOCAL_ENGINE_ADDRESS ? this.#local.persistent : undefined;
    return this.#external.find((e) => e.address === address)?.persistent;
  }

  /** Whether the engine at `address` answers its ping now. */
  isHealthy(address: string): boolean {
    return this.list().some((e) => e.address === address && e.healthy);
  }

  /**
   * The longest any engine's commands waited to be sent since the last call (NgClient.sampleSendWait): an engine
   * falling behind, for overload control.
   */
  sampleSendWait(): number {
    let wait = 0;
    for (const e of this.list()) wait = Math.max(wait, e.client.sampleSendWait());
    return wait;
  }

  /** One engine for a new call; MEDIA_NO_ENGINE when none is healthy. */
  pick(): MediaEngine {
    if (this.#local) {
      if (!this.#local.healthy) throw new MediaError('MEDIA_NO_ENGINE', 'local rtpengine is not healthy');
      this.#localEntry.placed += 1;
      return { address: LOCAL_ENGINE_ADDRESS, client: this.#local.client, healthy: true };
    }
    for (let i = 0; i < this.#external.length; i += 1) {
      const engine = this.#external[(this.#next + i) % this.#external.length];
      if (engine?.healthy) {
        this.#next = (this.#next + i + 1) % this.#external.length;
        engine.placed += 1;
        return engine;
      }
    }
    throw new MediaError('MEDIA_NO_ENGINE', 'no healthy rtpengine');
  }

  close(): void {
    clearTimeout(this.#pingTimer);
    this.#pingTimer = undefined;
    for (const e of this.#external) e.client.close();
  }
}
