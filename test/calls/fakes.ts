import { EventEmitter } from 'node:events';
import type { CallBilling } from '../../calls/call-billing.js';
import type { CallMedia } from '../../calls/call-media.js';
import type { SipRefusal, UnansweredLeg } from '../../calls/unanswered-leg.js';
import type { EventPublisher } from '../../events/index.js';
import type { RecordingResult } from '../../media/index.js';
import { roomLogger } from '../../config/index.js';
import { CallLifecycle } from '../../calls/lifecycle.js';
import { LiveCall, type LiveCallDeps } from '../../calls/live-call.js';
import { ManualClock } from '../../kit/index.js';
import type { Dialog } from '../../sip/stack/index.js';
import { insertCall, nowIso, type Db } from '../../store/index.js';

/** Stand-ins for the calls room's unit tests: each writes what it is asked into one shared, ordered log. */
export type Steps = string[];

/** A promise the test settles by hand. */
export function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** Lets every pending promise callback run (no timers involved). */
export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i += 1) await new Promise<void>((r) => setImmediate(r));
}

/** Where a unit test's call starts on its ManualClock (the kit's one fake clock). */
export const CALL_EPOCH = Date.parse('2025-01-01T10:00:00.000Z');

/**
 * The call's media: say/play resolve at once unless `holdPlayback` is set, then they run until their signal
 * aborts (a prompt being spoken when the call is hung up).
 */
export class FakeMedia implements CallMedia {
  holdPlayback = false;
  sessionRecording: RecordingResult | undefined;
  recording = false;
  readonly signals: AbortSignal[] = [];
  constructor(private readonly steps: Steps) {}

  async #play(what: string, signal?: AbortSignal): Promise<void> {
    this.steps.push(what);
    if (signal) this.signals.push(signal);
    if (!this.holdPlayback || !signal) return;
    await new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
    this.steps.push(`${what} stopped`);
  }

  async say(text: string, opts: { signal?: AbortSignal } = {}) {
    await this.#play(`say ${text}`, opts.signal);
    return { ttsSeconds: 1.2, tier: 'standard' };
  }
  async playFile(path: string, opts: { signal?: AbortSignal }) {
    await this.#play(`play ${path}`, opts.signal);
  }
  async playUrl(url: string, opts: { signal?: AbortSignal }) {
    await this.#play(`play ${url}`, opts.signal);
  }
  async playBeep(opts: { signal?: AbortSignal }) {
    await this.#play('beep', opts.signal);
  }
  async record(): Promise<RecordingResult> {
    this.steps.push('record');
    return { path: '/tmp/none.wav', durationSec: 0, sizeBytes: 44, reason: 'silence' };
  }
  async sendDigits(digits: string) {
    this.steps.push(`digits ${digits}`);
  }
  isRecording() {
    return this.recording;
  }
  async startRecording() {
    this.recording = true;
    this.steps.push('start recording');
  }
  async close() {
    this.steps.push('media close');
    const r = this.sessionRecording;
    this.sessionRecording = undefined;
    return r ? { sessionRecording: r } : {};
  }
}

/**
 * A leg's dialog once up: bye() is logged; remoteBye() is the far end's BYE arriving. A `name` (a bridge's two
 * legs) is logged with each: 'bye caller', 'remote bye callee'.
 */
export class FakeDialog extends EventEmitter {
  constructor(
    private readonly steps: Steps,
    private readonly name?: string,
  ) {
    super();
  }
  async bye() {
    this.steps.push(this.#named('bye'));
  }
  remoteBye() {
    this.steps.push(this.#named('remote bye'));
    this.emit('bye');
  }
  #named(step: string): string {
    return this.name ? `${step} ${this.name}` : step;
  }
}

/**
 * The caller's INVITE while it rings. answer() follows calls/flows/uas-leg.ts: the media answer (held on
 * `mediaReady`), then no 200 if the call ended meanwhile, else the 200 (`onUp`: the dialog attached, the call
 * answered).
 */
export class FakeLeg implements UnansweredLeg {
  readonly mediaReady = deferred();
  refusals: SipRefusal[] = [];
  constructor(
    private readonly steps: Steps,
    private readonly isEnding: () => boolean,
    private readonly onUp: () => Promise<void>,
  ) {}
  async answer() {
    this.steps.push('answer');
    await this.mediaReady.promise;
    if (this.isEnding()) {
      this.steps.push('no 200');
      throw new Error('canceled while the media was set up');
    }
    this.steps.push('200');
    await this.onUp();
  }
  async earlyMedia() {
    this.steps.push('183');
  }
  refuse(r: SipRefusal) {
    this.refusals.push(r);
    this.steps.push(`refuse ${r.status}`);
  }
}

/** Credit control: callAnswered may be held (`answerGate`); callEnded settles 7 cents. */
export class FakeBilling implements CallBilling {
  answerGate: Promise<void> | undefined;
  readonly settlements: { callId: string; endedAt: Date }[] = [];
  constructor(private readonly steps: Steps) {}
  async callAnswered() {
    this.steps.push('billing start');
    await this.answerGate;
    this.steps.push('billing started');
  }
  ttsUsed() {}
  async callEnded(callId: string, endedAt: Date) {
    this.settlements.push({ callId, endedAt });
    this.steps.push('settle');
    return { costCents: 7 };
  }
}

/** The event publisher: every event's code goes to the log. */
export function fakeEvents(steps: Steps): EventPublisher {
  return {
    emit: async (e: { code: string }) => void steps.push(e.code),
  } as unknown as EventPublisher;
}

/**
 * Waits until `done()` holds: the store on SQLite answers on its own thread, so a fixed number of turns is not
 * enough. No time passes for the call (its clock is manual); the wait is bounded.
 */
export async function until(done: () => boolean, what = 'condition'): Promise<void> {
  for (let i = 0; i < 5000; i += 1) {
    if (done()) return;
    await new Promise<void>((r) => setTimeout(r, 1));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The steps of `want`, in that order, among `steps` (others may come between). */
export function subsequence(steps: Steps, want: string[]): string[] {
  let i = 0;
  return steps.filter((s) => (s === want[i] ? (i += 1) > 0 : false));
}

/**
 * An inbound LiveCall still ringing, over the real lifecycle and store, with every other part a stand-in logging to
 * one `steps` list; its leg answers as calls/flows/uas-leg.ts does (media answer, then the 200 unless the call
 * ended meanwhile, then answered) once the test resolves `leg.mediaReady`.
 */
export async function inboundLiveCall(db: Db, accountId: string, extra: Partial<LiveCallDeps> = {}) {
  const log = roomLogger('calls');
  const steps: Steps = [];
  const clock = new ManualClock(CALL_EPOCH);
  const row = await insertCall(db, {
    account_id: accountId,
    direction: 'inbound',
    from_number: '+254733000001',
    to_number: '+254711000001',
    status: 'ringing',
    started_at: nowIso(new Date(clock.now())),
  });
  const events = fakeEvents(steps);
  const media = new FakeMedia(steps);
  const billing = new FakeBilling(steps);
  const call = new LiveCall(
    { db, media, events, log, billing, clock, webhookTimeoutMs: 1000, recordingRetentionDays: 30, ...extra },
    new CallLifecycle({ db, events, log }, row),
  );
  const dialog = new FakeDialog(steps);
  const leg = new FakeLeg(
    steps,
    () => call.isEnding,
    async () => {
      call.attachDialog(dialog as unknown as Dialog);
      await call.answered();
    },
  );
  call.answerWhenNeeded(leg);
  return { steps, clock, call, media, billing, dialog, leg };
}
