import type { LegAudioPort, MediaService, RecordingResult, TtsSubstitution } from '../media/index.js';

/** The platform's own leg of an IVR call is tagged 'A' in the media session (see media/README.md). */
export const CALLER_LEG = 'A';

/**
 * What a call the platform answers or places (LiveCall) needs of its media, bound to that call and its caller's
 * leg: the one seam between the calls room and media for a live call's verbs and its end. Errors are MediaError.
 * The engine builds it over the MediaService (mediaOfCall); unit tests give a fake.
 */
export interface CallMedia {
  /** `ssml`: the text is SSML (TtsRequest.ssml). `substituted`: voice names spoken with the default instead. */
  say(
    text: string,
    opts?: { voice?: string; language?: string; ssml?: boolean; signal?: AbortSignal },
  ): Promise<{ ttsSeconds: number; tier: string; substituted?: readonly TtsSubstitution[] }>;
  playFile(path: string, opts: { signal?: AbortSignal }): Promise<void>;
  /** Rejects with MediaError when the URL's body cannot be fetched or is not audio. */
  playUrl(url: string, opts: { signal?: AbortSignal }): Promise<void>;
  playBeep(opts: { signal?: AbortSignal }): Promise<void>;
  record(opts: { maxLengthSec: number; silenceTimeoutSec: number; signal: AbortSignal }): Promise<RecordingResult>;
  /** Keys sent towards the caller as RFC 4733 events (MediaService.sendDigits); MEDIA_LEG_BRIDGED during a Dial. */
  sendDigits(digits: string): Promise<void>;
  /** RecordSession is running on this call. */
  isRecording(): boolean;
  startRecording(opts: { maxLengthSec?: number; mono?: boolean }): Promise<void>;
  /** The caller's audio both ways as PCMU frames (queues, media streams); MediaError when not the platform's. */
  audioPort?(): LegAudioPort;
  /** Ends the call's media (playbacks, recordings, ports); safe twice. Hands back the RecordSession file, if any. */
  close(): Promise<{ sessionRecording?: RecordingResult }>;
}

/** The CallMedia of `callId` over the switch's MediaService, on the caller's leg `legTag`. */
export function mediaOfCall(media: MediaService, callId: string, legTag = CALLER_LEG): CallMedia {
  return {
    say: (text, opts) => media.say(callId, legTag, text, opts),
    playFile: async (path, opts) => void (await media.playFile(callId, legTag, path, opts)),
    playUrl: async (url, opts) => void (await media.playUrl(callId, legTag, url, opts)),
    playBeep: async (opts) => void (await media.playBeep(callId, legTag, opts)),
    record: (opts) => media.record(callId, legTag, opts),
    sendDigits: (digits) => media.sendDigits(callId, legTag, digits),
    isRecording: () => media.isRecording(callId),
    startRecording: (opts) => media.startCallRecording(callId, legTag, opts),
    audioPort: () => media.audioPort(callId, legTag),
    close: () => media.deleteSession(callId),
  };
}
