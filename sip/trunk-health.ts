import { systemClock, TypedEmitter, type Clock, type Periodic } from '../kit/index.js';
import type { TrunkHealthState, TrunkRow } from '../store/index.js';

export interface TrunkHealthSettings {
  /** Seconds between OPTIONS pings of a trunk (routing.pingIntervalSeconds). */
  intervalSeconds: number;
  /** Consecutive unanswered (or 5xx-answered) pings that mark a trunk down (routing.pingDownAfter). */
  downAfter: number;
  /** Consecutive answered pings that bring a down trunk back up (routing.pingUpAfter). */
  upAfter: number;
}

export const DEFAULT_TRUNK_HEALTH: TrunkHealthSettings = { intervalSeconds: 10, downAfter: 2, upAfter: 2 };

/** A trunk went up or down: by its pings, or by a 503 with Retry-After ("down for N s") and its end. */
export interface TrunkStateChange {
  trunk: Pick<TrunkRow, 'id' | 'name'>;
  health: 'up' | 'down';
  previous: TrunkHealthState;
  cause: 'options' | 'retry-after';
  /** For `retry-after`: seconds the carrier asked us to stay away. */
  retryAfterSeconds?: number;
}

/** Sends one OPTIONS to the trunk; resolves true when it answered (any final response but 5xx/408), false else. */
export type TrunkPinger = (trunk: TrunkRow) => Promise<boolean>;

interface State {
  health: TrunkHealthState;
  fails: number;
  oks: number;
  /** A 503 Retry-After holds the trunk down until then (epoch ms). */
  heldUntil: number;
  name: string;
}

/**
 * Trunk health: each trunk with `options_ping` is sent an OPTIONS every interval; `downAfter`
 * consecutive failures mark it down, `upAfter` consecutive answers bring it back. A 503 with Retry-After to an
 * INVITE holds a trunk down for that long whether it is pinged or not. Routing asks `isUp` (a map read), so a down
 * trunk is skipped without a single packet or delay. Changes are emitted (`change`); the switch stores them
 * (trunks list) and streams them to staff (TRUNK.0100).
 */
export class TrunkHealth extends TypedEmitter<{ change: [TrunkStateChange] }> {
  readonly #states = new Map<string, State>();
  #timer: Periodic | undefined;
  #running = false;

  constructor(
    private readonly ping: TrunkPinger,
    private readonly settings: TrunkHealthSettings = DEFAULT_TRUNK_HEALTH,
    private readonly clock: Clock = systemClock,
  ) {
    super();
  }

  /** Starts the pings of the trunks `trunks()` returns (re-read each round, so CLI changes apply). */
  start(trunks: () => Promise<TrunkRow[]>): void {
    if (this.#timer || this.settings.intervalSeconds <= 0) return;
    const round = () => {
      if (this.#running) return; // a round still waiting on its pings: skip, never pile up
      this.#running = true;
      void trunks()
        .then((list) => this.round(list))
        .catch(() => undefined)
        .finally(() => (this.#running = false));
    };
    this.#timer = this.clock.every(this.settings.intervalSeconds * 1000, round, 'trunk-health');
    round();
  }

  stop(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** One round of pings to every active trunk that has them on; trunks that stopped being pinged are forgotten. */
  async round(trunks: readonly TrunkRow[]): Promise<void> {
    const pinged = trunks.filter((t) => t.is_active && t.options_ping);
    const ids = new Set(pinged.map((t) => t.id));
    for (const [id, s] of this.#states) if (!ids.has(id) && s.heldUntil <= this.clock.now()) this.#states.delete(id);
    await Promise.all(
      pinged.map(async (t) => {
        const ok = await this.ping(t).catch(() => false);
        this.record(t, ok);
      }),
    );
  }

  /** Counts one ping's outcome and changes the trunk's state when a threshold is crossed. */
  record(trunk: Pick<TrunkRow, 'id' | 'name'>, ok: boolean): void {
    const s = this.#state(trunk);
    if (ok) {
      s.oks++;
      s.fails = 0;
      if (s.health !== 'up' && (s.health === 'unknown' || s.oks >= this.settings.upAfter)) this.#set(trunk, s, 'up');
    } else {
      s.fails++;
      s.oks = 0;
      if (s.health !== 'down' && s.fails >= this.settings.downAfter) this.#set(trunk, s, 'down');
    }
  }

  /** A 503 with Retry-After: the trunk is skipped for `seconds` (bounded to an hour). */
  holdDown(trunk: Pick<TrunkRow, 'id' | 'name'>, seconds: number): void {
    const s = this.#state(trunk);
    const wait = Math.min(3600, Math.max(1, Math.floor(seconds)));
    const wasUp = this.isUp(trunk.id);
    s.heldUntil = this.clock.now() + wait * 1000;
    if (wasUp)
      this.emit('change', { trunk, health: 'down', previous: s.health, cause: 'retry-after', retryAfterSeconds: wait });
    this.clock.setTimeout(() => {
      if (this.isUp(trunk.id)) this.emit('change', { trunk, health: 'up', previous: 'down', cause: 'retry-after' });
    }, wait * 1000);
  }

  /** False while the trunk is down by its pings or held down by a Retry-After. */
  isUp(trunkId: string): boolean {
    const s = this.#states.get(trunkId);
    if (!s) return true;
    return s.health !== 'down' && s.heldUntil <= this.clock.now();
  }

  /** The state by pings ('unknown' for a trunk not pinged), and whether a Retry-After holds it down. */
  state(trunkId: string): { health: TrunkHealthState; heldUntil?: number } {
    const s = this.#states.get(trunkId);
    if (!s) return { health: 'unknown' };
    return s.heldUntil > this.clock.now() ? { health: s.health, heldUntil: s.heldUntil } : { health: s.health };
  }

  #state(trunk: Pick<TrunkRow, 'id' | 'name'>): State {
    let s = this.#states.get(trunk.id);
    if (!s) this.#states.set(trunk.id, (s = { health: 'unknown', fails: 0, oks: 0, heldUntil: 0, name: trunk.name }));
    return s;
  }

  #set(trunk: Pick<TrunkRow, 'id' | 'name'>, s: State, health: 'up' | 'down'): void {
    const previous = s.health;
    s.health = health;
    this.emit('change', { trunk, health, previous, cause: 'options' });
  }

  protected emit(event: 'change', change: TrunkStateChange): void {
    this.safeEmit(event, change);
  }
}
