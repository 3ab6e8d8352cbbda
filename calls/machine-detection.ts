import { canonicalJson, EventCodes, signWebhook } from '../events/index.js';
import { guardedRequest, requestUrl, systemClock, UrlPolicy, type Clock } from '../kit/index.js';
import {
  AMD_FRAME_SAMPLES,
  MachineDetector,
  MediaError,
  type MachineDetectionMode,
  type MachineDetectionParams,
  type MachineDetectionResult,
  type MediaService,
} from '../media/index.js';
import { getAccountSettings, type Db } from '../store/index.js';
import type { Logger } from '../kit/index.js';
import type { CallLifecycle } from './lifecycle.js';

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
/** The async callback is tried this many times, a second and then two apart. */
const CALLBACK_ATTEMPTS = 3;
const CALLBACK_TIMEOUT_MS = 10_000;

/**
 * Listens to `legTag` of `callId` (the callee of a call the platform placed: its IVR endpoint's far side) until the
 * detector decides; undefined when `signal` aborts first or the leg has no audio of ours (bridged away, ended).
 */
export function detectAnsweredBy(
  media: Pick<MediaService, 'tapAudio'>,
  callId: string,
  legTag: string,
  request: MachineDetectionRequest,
  signal: AbortSignal,
  clock: Clock = systemClock,
): Promise<MachineDetectionResult | undefined> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(undefined);
    const detector = new MachineDetector({ mode: request.mode, params: request.params ?? {}, clock });
    const frame = new Int16Array(AMD_FRAME_SAMPLES);
    let fill = 0;
    let untap: (() => void) | undefined;
    const done = (r: MachineDetectionResult | undefined): void => {
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
    try {
      untap = media.tapAudio(callId, legTag, (samples) => {
        for (let i = 0; i < samples.length && !detector.result; i++) {
          frame[fill++] = samples[i]!;
          if (fill < AMD_FRAME_SAMPLES) continue;
          fill = 0;
          const r = detector.push(frame);
          if (r) return done(r);
        }
      });
    } catch (e) {
      if (!(e instanceof MediaError)) throw e;
      done(undefined);
    }
  });
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

export interface MachineDetectionDeps {
  readonly db: Db;
  readonly log: Logger;
  readonly urlPolicy: UrlPolicy;
  readonly clock?: Clock;
}

/**
 * Records a verdict: on the call (answered_by), as AMD.0200 on the stream and status callbacks, and, for an async
 * request with a callback URL, as a signed POST to it (the call-control signature: X-Voice-Timestamp and
 * X-Voice-Signature over the URL, the timestamp and the body).
 */
export async function reportMachineDetection(
  d: MachineDetectionDeps,
  life: CallLifecycle,
  request: MachineDetectionRequest,
  result: MachineDetectionResult,
): Promise<void> {
  await life.setAnsweredBy(result.answeredBy, result.durationMs);
  await life.emit(EventCodes.machineDetected, machineDetectionData(result, request.mode));
  if (request.async && request.statusCallbackUrl) {
    await sendMachineDetectionCallback(d, life, request.statusCallbackUrl, result);
  }
}

async function sendMachineDetectionCallback(
  d: MachineDetectionDeps,
  life: CallLifecycle,
  target: string,
  result: MachineDetectionResult,
): Promise<void> {
  const row = life.row;
  const { signing_secret: secret } = await getAccountSettings(d.db, row.account_id);
  const url = requestUrl(target);
  const body = canonicalJson({
    CallSid: row.sid,
    AccountSid: row.account_id,
    Direction: row.direction === 'inbound' ? 'inbound' : 'outbound',
    From: row.from_number,
    To: row.to_number,
    AnsweredBy: result.answeredBy,
    MachineDetectionDuration: result.durationMs,
  });
  const clock = d.clock ?? systemClock;
  for (let attempt = 1; attempt <= CALLBACK_ATTEMPTS; attempt++) {
    const timestamp = String(Math.floor(clock.now() / 1000));
    const headers = {
      'Content-Type': 'application/json',
      'X-Voice-Timestamp': timestamp,
      'X-Voice-Signature': signWebhook(secret, url, timestamp, body),
    };
    try {
      const reply = await guardedRequest(
        url,
        { method: 'POST', headers, body, signal: AbortSignal.timeout(CALLBACK_TIMEOUT_MS), maxBytes: 4096 },
        d.urlPolicy,
      );
      if (reply.status >= 200 && reply.status < 300) return;
      d.log.warn({ call: row.sid, status: reply.status, attempt }, 'machine detection callback refused');
    } catch (e) {
      d.log.warn({ err: e, call: row.sid, attempt }, 'machine detection callback failed');
    }
    if (attempt < CALLBACK_ATTEMPTS) await new Promise((r) => clock.setTimeout(() => r(undefined), 1000 * attempt));
  }
}
