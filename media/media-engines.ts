import type { Logger } from '../config/index.js';
import { MediaError } from './errors.js';
import { NgClient } from './ng-client.js';
import type { RtpengineSupervisor } from './rtpengine-supervisor.js';
import { TypedEmitter } from '../kit/index.js';

/**
 * Which rtpengine a new call goes to. With `config.rtpengine.urls` set we use those external engines, one per
 * call in round robin, skipping those whose last ping failed (they are pinged every `pingIntervalMs`); otherwise
 * the supervised local engine. A call must stay on the engine that anchored it (its state lives there), so the
 * caller keeps the returned client for the life of the call.
 */
export interface MediaEngine {
  readonly address: string;
  readonly client: NgClient;
  readonly healthy: boolean;
}

class ExternalEngine implements MediaEngine {
  healthy = true;
  constructor(readonly client: NgClient) {}
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

/** 'engine-lost': an engine died and took its calls' state with it (the local engine exiting unexpectedly). */
export type MediaEnginesEvents = { 'engine-lost': [address: string] };

export const LOCAL_ENGINE_ADDRESS = 'local';

export class MediaEngines extends TypedEmitter<MediaEnginesEvents> {
  readonly #external: ExternalEngine[];
  readonly #local: RtpengineSupervisor | undefined;
  readonly #log: Logger | undefined;
  readonly #pingIntervalMs: number;
  #next = 0;
  #pingTimer: NodeJS.Timeout | undefined;

  constructor(opts: { urls: string[]; local?: RtpengineSupervisor; logger?: Logger; pingIntervalMs?: number }) {
    super(opts.logger);
    this.#external = opts.urls
      .filter((u) => u.trim() !== '')
      .map((u) => new ExternalEngine(new NgClient(parseEngineUrl(u))));
    this.#local = this.#external.length === 0 ? opts.local : undefined;
    if (this.#external.length === 0 && !opts.local) {
      throw new MediaError('MEDIA_NO_ENGINE', 'no rtpengine urls configured and no local supervisor given');
    }
    this.#local?.on('exit', ({ expected }) => {
      if (!expected) this.safeEmit('engine-lost', LOCAL_ENGINE_ADDRESS);
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
        const was = e.healthy;
        e.healthy = await e.client.ping(1000).catch(() => false);
        if (was !== e.healthy) this.#log?.warn({ engine: e.address, healthy: e.healthy }, 'rtpengine health changed');
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
      return { address: LOCAL_ENGINE_ADDRESS, client: this.#local.client, healthy: true };
    }
    for (let i = 0; i < this.#external.length; i += 1) {
      const engine = this.#external[(this.#next + i) % this.#external.length];
      if (engine?.healthy) {
        this.#next = (this.#next + i + 1) % this.#external.length;
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
