import { randomInt } from 'node:crypto';
import { sleep, type Clock } from '../kit/index.js';
import { MediaError } from './errors.js';
import { buildRtp } from './rtp-packet.js';

/**
 * Digits sent into a call towards its leg (POST /api/calls/{uuid}/digits, for a bot pressing keys on a carrier's
 * IVR): RFC 4733 telephone-events made by rtpengine's ng `play DTMF`, one command per key, paced here.
 *
 * Verified with rtpengine 10.5: `play DTMF` names the party the key comes *from* (our IVR end of the leg), and it
 * only injects into a stream that (a) passes through its transcoding engine, which the `inject DTMF` flag on the
 * offer and answer asks for, and (b) is flowing: an SSRC context of that party must exist and packets must keep
 * arriving, since the events replace audio frames. Our IVR end normally never sends (prompts are `play media`),
 * so while keys are sent it sends 20 ms frames of PCMU silence for rtpengine to write the events over.
 */

/** Keys as Twilio's sendDigits takes them: 0-9, *, #, A-D, and `w` for a half-second pause. */
export const DIGITS_PATTERN = /^[0-9*#A-Dw]+$/;
export const MAX_DIGITS = 32;
/** How long each key is held, and the gap after it (RFC 4733 events of 200 ms are what IVRs expect). */
export const DIGIT_TONE_MS = 200;
export const DIGIT_GAP_MS = 100;
export const DIGIT_PAUSE_MS = 500;
const FRAME_MS = 20;
const FRAME_SAMPLES = 160;
const SILENCE_PCMU = Buffer.alloc(FRAME_SAMPLES, 0xff);

/** Throws MEDIA_BAD_DIGITS unless `digits` is 1 to MAX_DIGITS keys of DIGITS_PATTERN. */
export function checkDigits(digits: string): void {
  if (digits.length === 0 || digits.length > MAX_DIGITS || !DIGITS_PATTERN.test(digits))
    throw new MediaError('MEDIA_BAD_DIGITS', `digits must be 1 to ${MAX_DIGITS} of 0-9 * # A-D w`);
}

/** Milliseconds sending `digits` takes. */
export function digitsDurationMs(digits: string): number {
  let ms = 0;
  for (const key of digits) ms += key === 'w' ? DIGIT_PAUSE_MS : DIGIT_TONE_MS + DIGIT_GAP_MS;
  return ms;
}

export interface DigitSenderDeps {
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout' | 'every'>;
  /** Sends one RTP packet from our end of the leg to rtpengine; false once the endpoint is closed. */
  send(packet: Buffer): boolean;
  /** ng `play DTMF` of one key from our end of the leg. */
  playKey(key: string, durationMs: number): Promise<void>;
}

/**
 * Sends `digits` (already checked) one key after the other, with a carrier stream of silence under them; stops
 * early when `signal` aborts. Resolves when the last key has been played out.
 */
export async function sendDigits(d: DigitSenderDeps, digits: string, signal?: AbortSignal): Promise<void> {
  const ssrc = randomInt(0, 2 ** 32);
  let sequence = randomInt(0, 2 ** 16);
  let timestamp = randomInt(0, 2 ** 32);
  const frame = (): boolean => {
    const sent = d.send(buildRtp({ payloadType: 0, sequence, timestamp, ssrc, payload: SILENCE_PCMU }));
    sequence = (sequence + 1) & 0xffff;
    timestamp = (timestamp + FRAME_SAMPLES) >>> 0;
    return sent;
  };
  if (!frame()) throw new MediaError('MEDIA_NO_SESSION', 'the leg has no IVR endpoint to send digits from');
  const stream = d.clock.every(FRAME_MS, () => void frame(), 'digit-carrier');
  try {
    // rtpengine needs a few packets of the stream before the first event (its SSRC context).
    await sleep(d.clock, 3 * FRAME_MS, signal);
    for (const key of digits) {
      if (signal?.aborted) return;
      if (key === 'w') {
        await sleep(d.clock, DIGIT_PAUSE_MS, signal);
        continue;
      }
      await d.playKey(key, DIGIT_TONE_MS);
      await sleep(d.clock, DIGIT_TONE_MS + DIGIT_GAP_MS, signal);
    }
    // The end packets of the last event ride on the stream too.
    await sleep(d.clock, 3 * FRAME_MS, signal);
  } finally {
    stream.cancel();
  }
}
