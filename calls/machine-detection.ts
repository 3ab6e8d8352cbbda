import { canonicalJson, EventCodes } from '../events/index.js';
import { systemClock, type Clock } from '../kit/index.js';
import {
  AMD_FRAME_SAMPLES,
  MachineDetector,
  MediaError,
  type MachineDetectionMode,
  type MachineDetectionParams,
  type MachineDetectionResult,
  type MediaService,
} from '../media/index.js';
import type { CallServices } from './call-services.js';
import type { CallLifecycle } from './call-lifecycle.js';

/** What a placed call asked of answering machine detection (originate's machine_detection, Dial's attribute). */
export interface MachineDetectionRequest {
  readonly mode: MachineDetectionMode;
  readonly params?: Partial<MachineDetectionParams>;
  /** The call-control document runs at once and the verdict arrives as a callback and an event. */
  readonly async?: boolean;
  /** Async only: where the signed verdict is POSTed. */
  readonly statusCallbackUrl?: string;
}

/** How often missing audio and the time limit are checked, ms. */
const POLL_MS = 100;

/**
 * Where the detector hears the callee: it hands 8 kHz PCM to `onAudio` from when it resolves until its returned
 * function is called. The callee of a placed call is our IVR endpoint's far side (MediaService.tapAudio); a Dial's
 * dialled leg, bridged inside rtpengine, is heard on a copy of its media (MediaService.forkAudio).
 */
export type CalleeAudio = (onAudio: (samples: Int16Array) => void) => Promise<() => void>;

/** The callee of a call the platform placed, as our IVR endpoint hears it. */
export function ivrAudio(media: Pick<MediaService, 'tapAudio'>, callId: string, legTag: string): CalleeAudio {
  return async (onAudio) => media.tapAudio(callId, legTag, onAudio);
}

/** A leg bridged to another inside rtpengine (a Dial's dialled leg), heard on a copy of its media. */
export function forkedAudio(media: Pick<MediaService, 'forkAudio'>, callId: string, legTag: string): CalleeAudio {
  return (onAudio) => media.forkAudio(callId, legTag, onAudio);
}

/**
 * Listens to the callee (`audio`) until the detector decides; undefined when `signal` aborts first or the leg has
 * no audio to hear (bridged away, ended).
 */
export function detectAnsweredBy(
  audio: CalleeAudio,
  request: MachineDetectionRequest,
  signal: AbortSignal,
  clock: Clock = systemClock,
): Promise<MachineDetectionResult | undefined> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve(undefined);
    const started = clock.now();
    const detector = new MachineDetector({ mode: request.mode, params: request.params ?? {}, clock });
    const frame = new Int16Array(AMD_FRAME_SAMPLES);
    let fill = 0;
    let untap: (() => void) | undefined;
    let settled = false;
    const done = (r: MachineDetectionResult | undefined): void => {
      if (settled) return;
      settled = true;
      untap?.();
      poll.cancel();
      signal.removeEventListener('abort', onAbort);
      resolve(r);
    };
    const onAbort = (): void => done(undefined);
    const poll = clock.every(POLL_MS, () => {
      const r = detector.poll();
      if (r) done(r);
    });
    signal.addEventListener('abort', onAbort, { once: true });
    audio((samples) => {
      for (let i = 0; i < samples.length && !settled; i++) {
        frame[fill++] = samples[i]!;
        if (fill < AMD_FRAME_SAMPLES) continue;
        fill = 0;
        const r = detector.push(frame);
        if (r) return done(r);
      }
    }).then(
      (stop) => {
        if (settled) stop();
        else untap = stop;
      },
      (e: unknown) => {
        // The media engine could not give us the callee's audio: a verdict of `unknown`, not silence forever.
        if (e instanceof MediaError) return done(signal.aborted ? undefined : noAudio(started, clock));
        settled = true;
        poll.cancel();
        signal.removeEventListener('abort', onAbort);
        reject(e as Error);
      },
    );
  });
}

/** The verdict when the callee's audio could not be heard at all. */
function noAudio(started: number, clock: Clock): MachineDetectionResult {
  return {
    answeredBy: 'unknown',
    durationMs: clock.now() - started,
    audioMs: 0,
    reason: 'no_audio',
    words: 0,
    voiceMs: 0,
    segments: [],
  };
}

/**
 * Detects who answered and reports it on `life` (the call row, AMD.0200, the async callback); never throws. The
 * caller's `signal` ends it early (the call or the bridge ended): then nothing is reported.
 */
export async function detectAndReport(
  d: Pick<CallServices, 'log' | 'clock'>,
  life: CallLifecycle,
  audio: CalleeAudio,
  request: MachineDetectionRequest,
  signal: AbortSignal,
): Promise<void> {
  try {
    const result = await detectAnsweredBy(audio, request, signal, d.clock);
    if (!result || life.isEnded) return;
    if (result.reason === 'no_audio')
      d.log.warn({ call: life.row.sid }, "machine detection heard none of the callee's audio");
    await reportMachineDetection(life, request, result);
  } catch (e) {
    d.log.error({ err: e, call: life.row.sid }, 'machine detection failed');
  }
}

/** The event's data: the verdict and what it was decided on, so a customer can tune the thresholds. */
export function machineDetectionData(r: MachineDetectionResult, mode: MachineDetectionMode): Record<string, unknown> {
  return {
    answeredBy: r.answeredBy,
    machineDetectionDuration: r.durationMs,
    mode,
    reason: r.reason,
    words: r.words,
    voiceMs: r.voiceMs,
    segments: r.segments,
  };
}

/**
 * The outbox route the asynchronous verdict goes by: its deliveries are reported (WH.0200, WH.0400) and its
 * failures counted apart from the status route's, per URL.
 */
export const AMD_CALLBACK_ROUTE = 'amd';

/**
 * Records a verdict: on the call (answered_by), as AMD.0200 on the stream and status callbacks, and, for an async
 * request with a callback URL, its JSON to that URL through the status-callback outbox (stored with the event, so
 * retried on the outbox's schedule and delivered after a restart; signed like every request: X-Voice-Timestamp and
 * X-Voice-Signature over the URL, the timestamp and the body).
 */
export async function reportMachineDetection(
  life: CallLifecycle,
  request: MachineDetectionRequest,
  result: MachineDetectionResult,
): Promise<void> {
  await life.setAnsweredBy(result.answeredBy, result.durationMs);
  const row = life.row;
  const alsoTo =
    request.async && request.statusCallbackUrl
      ? {
          route: AMD_CALLBACK_ROUTE,
          url: request.statusCallbackUrl,
          body: canonicalJson({
            CallSid: row.sid,
            AccountSid: row.account_id,
            Direction: row.direction === 'inbound' ? 'inbound' : 'outbound',
            From: row.from_number,
            To: row.to_number,
            AnsweredBy: result.answeredBy,
            MachineDetectionDuration: result.durationMs,
          }),
        }
      : undefined;
  await life.emit(EventCodes.machineDetected, machineDetectionData(result, request.mode), alsoTo);
}
