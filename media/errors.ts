/**
 * Typed errors of the media room. Every error that leaves `media/` is a `MediaError` with a stable `code`, so a
 * verb can map it (e.g. `MEDIA_FETCH_FAILED` -> PLAY.0404) without parsing messages.
 */
export type MediaErrorCode =
  | 'MEDIA_TIMEOUT' // the engine did not answer an ng request in time
  | 'MEDIA_ENGINE_ERROR' // the engine answered result=error (error-reason in the message)
  | 'MEDIA_ENGINE_GONE' // the ng client was closed or the engine went away with requests pending
  | 'MEDIA_NO_ENGINE' // no healthy rtpengine to send a call to
  | 'MEDIA_PROTOCOL' // an answer we could not decode
  | 'MEDIA_ENGINE_START_FAILED' // the supervised rtpengine did not come up
  | 'MEDIA_UNSUPPORTED_VOICE' // TwiML voice/language with no espeak-ng mapping
  | 'MEDIA_TTS_FAILED' // espeak-ng or sox failed
  | 'MEDIA_FETCH_FAILED' // an audio URL could not be fetched (network, status, size or time limit)
  | 'MEDIA_DECODE_FAILED' // fetched audio could not be decoded by sox
  | 'MEDIA_NO_SESSION' // an operation on a call id we hold no media session for
  | 'MEDIA_CANCELLED' // a playback or recording was cancelled by the caller
  | 'MEDIA_BAD_DIGITS' // digits to send hold a key outside 0-9 * # A-D w, or too many
  | 'MEDIA_LEG_BRIDGED' // the leg is bridged to another (Dial), not answered by the platform
  | 'MEDIA_RECORDING_FAILED' // a recording could not be produced
  | 'MEDIA_STREAM_FAILED'; // a media stream's WebSocket could not be opened (URL refused, unreachable, handshake)

export class MediaError extends Error {
  readonly code: MediaErrorCode;
  override readonly cause?: unknown;

  constructor(code: MediaErrorCode, message: string, cause?: unknown) {
    super(message);
    this.name = 'MediaError';
    this.code = code;
    this.cause = cause;
  }
}
