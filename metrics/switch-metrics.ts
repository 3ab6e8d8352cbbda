import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Figures read when Prometheus scrapes, from the rooms that own them (wired by the composition root). */
export interface LiveFigures {
  /** Calls this switch holds live now. */
  liveCalls: () => number;
  /** Status callbacks waiting in the outbox (pending rows). */
  outboxBacklog: () => Promise<number>;
  /** Whether at least one rtpengine answers. */
  mediaUp: () => Promise<boolean>;
  /** Each rtpengine: whether it answers its ping, times it was lost and restarted, new calls placed on it. */
  mediaEngines?: () => EngineFigures[];
  /** SIP capture: HEP packets sent and dropped (a slow or dead collector), messages kept for ladders. */
  sipCapture?: () => CaptureFigures;
}

/** SIP capture's figures (sip/capture/, as far as /metrics reads them). */
export interface CaptureFigures {
  hep: { sent: number; dropped: number; queued: number } | undefined;
  ladderMessages: number;
  ladderBytes: number;
}

/** One rtpengine's figures (the media room's MediaEngineStatus, as far as /metrics reads it). */
export interface EngineFigures {
  address: string;
  healthy: boolean;
  losses: number;
  restarts: number;
  placed: number;
}

/** Seconds of the sliding window calls/s is measured over. */
const RATE_WINDOW_SECONDS = 10;
/** Calls followed at once for post-dial delay and per-trunk duration; beyond it the oldest are forgotten. */
const MAX_TRACKED = 100_000;

/**
 * The switch's figures in Prometheus form (prom-client, one Registry per switch so test switches in one process
 * keep theirs apart). Call counters move on the call's own events (fed by api/metrics-feed.ts from the event bus),
 * so they count exactly the CDRs: one per terminal event, each CDR having exactly one.
 */
export class SwitchMetrics {
  readonly registry = new Registry();
  readonly #callsTotal: Counter<'direction' | 'status'>;
  readonly #callsStarted: Counter<'direction'>;
  readonly #attempts: Counter<'trunk' | 'outcome'>;
  readonly #trunkTalk: Counter<'trunk'>;
  readonly #trunkAnsweredEnded: Counter<'trunk'>;
  readonly #pdd: Histogram<'direction'>;
  readonly #webhook: Histogram<'outcome'>;
  readonly #loop: IntervalHistogram;
  /** Calls seen initiated and not yet ringing (post-dial delay) or not yet ended (a CDR counted once). */
  readonly #started = new Map<string, { at: number; rang: boolean }>();
  /** The trunk that answered each call (ACD per trunk at its end). */
  readonly #trunkOf = new Map<string, string>();
  /** Per trunk: attempts and answers (ASR), talk seconds and answered calls ended (ACD). */
  readonly #trunks = new Map<string, TrunkTally>();
  /** Calls started in each of the last RATE_WINDOW_SECONDS seconds (ring buffer by second). */
  readonly #perSecond = new Array<{ second: number; n: number }>(RATE_WINDOW_SECONDS).fill({ second: -1, n: 0 });
  readonly #now: () => number;

  constructor(figures: LiveFigures, now: () => number = Date.now) {
    this.#now = now;
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 10 });
    this.#callsTotal = new Counter({
      name: 'simu_calls_total',
      help: 'Calls ended (one per CDR), by direction and final status.',
      labelNames: ['direction', 'status'],
      registers,
    });
    this.#callsStarted = new Counter({
      name: 'simu_calls_started_total',
      help: 'Calls written (placed, or refused before placing), by direction.',
      labelNames: ['direction'],
      registers,
    });
    new Gauge({
      name: 'simu_live_calls',
      help: 'Calls this switch holds live now.',
      registers,
      collect() {
        this.set(figures.liveCalls());
      },
    });
    const perSecond = () => this.#callsPerSecond();
    new Gauge({
      name: 'simu_calls_per_second',
      help: `New calls per second over the last ${RATE_WINDOW_SECONDS} s.`,
      registers,
      collect() {
        this.set(perSecond());
      },
    });
    this.#attempts = new Counter({
      name: 'simu_trunk_attempts_total',
      help: 'Outbound INVITEs to each trunk, by outcome (answered, rejected, no-answer, silent, timeout, ...).',
      labelNames: ['trunk', 'outcome'],
      registers,
    });
    this.#trunkTalk = new Counter({
      name: 'simu_trunk_talk_seconds_total',
      help: 'Talk time of the ended calls each trunk answered.',
      labelNames: ['trunk'],
      registers,
    });
    this.#trunkAnsweredEnded = new Counter({
      name: 'simu_trunk_answered_calls_total',
      help: 'Ended calls each trunk answered (the ACD divisor).',
      labelNames: ['trunk'],
      registers,
    });
    const asr = () => this.#asr();
    new Gauge({
      name: 'simu_trunk_asr_ratio',
      help: 'Answer-seizure ratio per trunk: answered attempts over all attempts since start.',
      labelNames: ['trunk'],
      registers,
      collect() {
        this.reset();
        for (const [trunk, v] of asr()) this.set({ trunk }, v);
      },
    });
    const acd = () => this.#acd();
    new Gauge({
      name: 'simu_trunk_acd_seconds',
      help: 'Average call duration (talk time) per trunk of the calls it answered, since start.',
      labelNames: ['trunk'],
      registers,
      collect() {
        this.reset();
        for (const [trunk, v] of acd()) this.set({ trunk }, v);
      },
    });
    this.#pdd = new Histogram({
      name: 'simu_post_dial_delay_seconds',
      help: 'From a call being placed to its first ringing, early media or answer.',
      labelNames: ['direction'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30],
      registers,
    });
    this.#webhook = new Histogram({
      name: 'simu_status_callback_latency_seconds',
      help: 'From an event to its status callback being delivered (or given up), retries included.',
      labelNames: ['outcome'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180],
      registers,
    });
    new Gauge({
      name: 'simu_outbox_backlog',
      help: 'Status callbacks waiting for delivery.',
      registers,
      async collect() {
        this.set(await figures.outboxBacklog());
      },
    });
    new Gauge({
      name: 'simu_rtpengine_up',
      help: '1 when at least one rtpengine answers, else 0.',
      registers,
      async collect() {
        this.set((await figures.mediaUp().catch(() => false)) ? 1 : 0);
      },
    });
    const engines = figures.mediaEngines;
    if (engines) {
      const perEngine = (name: string, help: string, value: (e: EngineFigures) => number) =>
        new Gauge({
          name,
          help,
          labelNames: ['engine'],
          registers,
          collect() {
            this.reset();
            for (const e of engines()) this.set({ engine: e.address }, value(e));
          },
        });
      perEngine('simu_rtpengine_engine_up', '1 when this rtpengine answers its ng ping, else 0.', (e) =>
        e.healthy ? 1 : 0,
      );
      perEngine(
        'simu_rtpengine_losses',
        'Times this rtpengine was lost (it exited, or stopped answering).',
        (e) => e.losses,
      );
      perEngine('simu_rtpengine_restarts', 'Times the supervisor restarted this rtpengine.', (e) => e.restarts);
      perEngine('simu_rtpengine_calls_placed', 'New calls placed on this rtpengine since start.', (e) => e.placed);
    }
    const capture = figures.sipCapture;
    if (capture) {
      const read = (name: string, help: string, value: (f: CaptureFigures) => number | undefined, total = false) => {
        const collect = function (this: Gauge | Counter) {
          const v = value(capture());
          this.reset();
          if (v === undefined) return;
          if (this instanceof Counter) this.inc(v);
          else this.set(v);
        };
        if (total) new Counter({ name, help, registers, collect });
        else new Gauge({ name, help, registers, collect });
      };
      read('simu_hep_packets_sent_total', 'SIP messages sent to the HEP collector.', (f) => f.hep?.sent, true);
      read(
        'simu_hep_packets_dropped_total',
        'SIP messages not sent to the HEP collector: its queue was full or the send failed.',
        (f) => f.hep?.dropped,
        true,
      );
      read('simu_hep_queue', 'SIP messages waiting to be sent to the HEP collector.', (f) => f.hep?.queued);
      read('simu_sip_ladder_messages', "SIP messages kept in memory for calls' ladders.", (f) => f.ladderMessages);
      read('simu_sip_ladder_bytes', "Bytes of the SIP messages kept for calls' ladders.", (f) => f.ladderBytes);
    }
    this.#loop = monitorEventLoopDelay({ resolution: 10 });
    this.#loop.enable();
    const loop = this.#loop;
    new Gauge({
      name: 'simu_event_loop_delay_seconds',
      help: 'Event-loop delay since the previous scrape, by quantile (max is the largest seen).',
      labelNames: ['quantile'],
      registers,
      collect() {
        for (const q of [0.5, 0.9, 0.99]) this.set({ quantile: String(q) }, loop.percentile(q * 100) / 1e9);
        this.set({ quantile: 'max' }, loop.max / 1e9);
        loop.reset();
      },
    });
  }

  /** A call was placed (CALL.0100). */
  callStarted(callId: string, direction: string): void {
    this.#remember(this.#started, callId, { at: this.#now(), rang: false });
    this.#countStart(direction);
  }

  /** The call's first ringing, early media or answer: its post-dial delay. */
  callProgressed(callId: string, direction: string): void {
    const s = this.#started.get(callId);
    if (!s || s.rang) return;
    s.rang = true;
    this.#pdd.observe({ direction }, Math.max(0, this.#now() - s.at) / 1000);
  }

  /** The call's CDR was closed (CALL.0300 or CALL.0400): a call refused before it was placed is also started now. */
  callEnded(callId: string, direction: string, status: string, talkSeconds: number | null): void {
    if (!this.#started.delete(callId)) this.#countStart(direction);
    this.#callsTotal.inc({ direction, status });
    const trunk = this.#trunkOf.get(callId);
    if (trunk !== undefined) {
      this.#trunkOf.delete(callId);
      this.#trunkTalk.inc({ trunk }, talkSeconds ?? 0);
      this.#trunkAnsweredEnded.inc({ trunk });
      const t = this.#trunk(trunk);
      t.talkSeconds += talkSeconds ?? 0;
      t.ended += 1;
    }
  }

  /** One INVITE to a trunk and how it ended (ROUTE.0100). */
  trunkAttempt(callId: string | undefined, trunk: string, outcome: string): void {
    this.#attempts.inc({ trunk, outcome });
    const t = this.#trunk(trunk);
    t.attempts += 1;
    if (outcome !== 'answered') return;
    t.answered += 1;
    if (callId) this.#remember(this.#trunkOf, callId, trunk);
  }

  /** A status callback delivered or given up, `seconds` after its event. */
  webhookSettled(outcome: 'delivered' | 'failed', seconds: number): void {
    this.#webhook.observe({ outcome }, Math.max(0, seconds));
  }

  /** The Prometheus text exposition format (version 0.0.4). */
  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  close(): void {
    this.#loop.disable();
    this.registry.clear();
  }

  #remember<V>(map: Map<string, V>, key: string, value: V): void {
    if (map.size >= MAX_TRACKED) map.delete(map.keys().next().value!);
    map.set(key, value);
  }

  #countStart(direction: string): void {
    this.#callsStarted.inc({ direction });
    const second = Math.floor(this.#now() / 1000);
    const slot = second % RATE_WINDOW_SECONDS;
    const cur = this.#perSecond[slot];
    this.#perSecond[slot] = cur.second === second ? { second, n: cur.n + 1 } : { second, n: 1 };
  }

  #callsPerSecond(): number {
    const now = Math.floor(this.#now() / 1000);
    let n = 0;
    for (const s of this.#perSecond) if (s.second > now - RATE_WINDOW_SECONDS) n += s.n;
    return n / RATE_WINDOW_SECONDS;
  }

  #asr(): Map<string, number> {
    return new Map([...this.#trunks].map(([trunk, t]) => [trunk, t.attempts === 0 ? 0 : t.answered / t.attempts]));
  }

  #acd(): Map<string, number> {
    return new Map(
      [...this.#trunks].filter(([, t]) => t.ended > 0).map(([trunk, t]) => [trunk, t.talkSeconds / t.ended]),
    );
  }

  #trunk(name: string): TrunkTally {
    let t = this.#trunks.get(name);
    if (!t) this.#trunks.set(name, (t = { attempts: 0, answered: 0, talkSeconds: 0, ended: 0 }));
    return t;
  }
}

interface TrunkTally {
  attempts: number;
  answered: number;
  talkSeconds: number;
  ended: number;
}
