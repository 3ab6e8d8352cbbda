import { MediaError } from './errors.js';
import type { RecordingResult } from './ivr-endpoint.js';
import { findCallPcaps, pcapToStereoWav, type RecordedPrompt } from './session-recording.js';

/**
 * What a RecordSession records:
 * - `bridge`: both directions between two SIP legs, one per channel (left = legs[0], right = legs[1]);
 * - `caller`: a call the platform answered or placed: the caller (`callerTag`) left, everything it hears right
 *   (every other rtpengine port of the call, so the far side may change between the IVR and bridges, plus the
 *   prompts we played to it, which rtpengine's pcap does not hold). `mono` mixes both; `maxLengthSec` cuts it.
 */
export type RecordingTarget =
  | { kind: 'bridge'; legs: [string, string] }
  | { kind: 'caller'; callerTag: string; maxLengthSec?: number; mono?: boolean };

/**
 * A MediaSession's RecordSession, its child: created when a start is asked (so a second start while the first is
 * in flight changes nothing), `begin` once rtpengine records, then `write` turns the engine's pcaps into the WAV.
 */
export class SessionRecorder {
  readonly target: RecordingTarget;
  readonly path: string;
  readonly prompts: RecordedPrompt[] = [];
  #legPorts: [number, number] | ((port: number) => number) | undefined;
  #startedAtMs: number | undefined;

  constructor(target: RecordingTarget, path: string) {
    this.target = target;
    this.path = path;
  }

  /** True once rtpengine has acknowledged `start recording`. */
  get started(): boolean {
    return this.#startedAtMs !== undefined;
  }

  /** Which rtpengine port feeds which channel, from the engine's `query` answer for the call. */
  locate(query: Record<string, unknown>): void {
    const t = this.target;
    if (t.kind === 'bridge') {
      this.#legPorts = [localPort(query, t.legs[0]), localPort(query, t.legs[1])];
    } else {
      const callerPort = localPort(query, t.callerTag);
      this.#legPorts = (port) => (port === callerPort ? 0 : 1);
    }
  }

  begin(atMs: number): void {
    this.#startedAtMs = atMs;
  }

  /** Notes a prompt played to `legTag` if it is the recorded caller; the returned entry takes `stoppedAtMs`. */
  notePrompt(legTag: string, path: string, atMs: number): RecordedPrompt | undefined {
    if (!this.started || this.target.kind !== 'caller' || this.target.callerTag !== legTag) return undefined;
    const prompt: RecordedPrompt = { startedAtMs: atMs, path };
    this.prompts.push(prompt);
    return prompt;
  }

  /** The WAV, from the call's pcaps in rtpengine's recording directory and the prompts noted. */
  async write(engineRecordingDir: string, callId: string): Promise<RecordingResult> {
    const pcaps = await findCallPcaps(engineRecordingDir, callId);
    if (pcaps.length === 0 && this.prompts.length === 0) {
      throw new MediaError('MEDIA_RECORDING_FAILED', `no pcap for call ${callId}`);
    }
    const t = this.target;
    return pcapToStereoWav({
      pcapPaths: pcaps,
      legPorts: this.#legPorts ?? [-1, -1],
      path: this.path,
      prompts: this.prompts,
      maxLengthSec: t.kind === 'caller' ? t.maxLengthSec : undefined,
      mono: t.kind === 'caller' ? t.mono : undefined,
      startedAtMs: this.#startedAtMs,
    });
  }
}

/** rtpengine's local RTP port for a leg, from a `query` answer (tags.<tag>.medias[0].streams[0]['local port']). */
function localPort(query: Record<string, unknown>, tag: string): number {
  const tags = query.tags as Record<string, { medias?: Array<{ streams?: Array<{ 'local port'?: number }> }> }>;
  const port = tags?.[tag]?.medias?.[0]?.streams?.[0]?.['local port'];
  if (typeof port !== 'number') throw new MediaError('MEDIA_RECORDING_FAILED', `leg ${tag} has no media in the engine`);
  return port;
}
