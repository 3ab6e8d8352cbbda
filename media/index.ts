/**
 * The media room: rtpengine (supervised locally or external), speech, playback, recording, DTMF.
 * See media/README.md for the design of IVR legs and recordings.
 *
 * How the calls room and verbs use it (all errors are MediaError with a stable `code`):
 *
 *   const supervisor = new RtpengineSupervisor({ ngPort, interface, portMin, portMax, dataDir, logger,
 *                                                dtmfLogPort });            // only when no rtpengine.urls
 *   await supervisor.start();
 *   const media = new MediaService({ engines: new MediaEngines({ urls: config.rtpengine.urls, local: supervisor }),
 *                                    dataDir, logger, engineRecordingDir: supervisor.recordingDir,
 *                                    dtmfPort: dtmfLogPort });
 *   await media.start();
 *
 *   // B2BUA bridge (Dial): SDP in from one dialog, SDP out for the other.
 *   const sdpForB = await media.offer(callSid, aTag, sdpFromA, { toSide: { profile: 'rtp' | 'webrtc' } });
 *   const sdpForA = await media.answer(callSid, aTag, bTag, sdpFromB, { fromSide: { profile } });
 *   // IVR leg (the platform answers): answer the caller with this SDP, then Say / Play / Record on aTag.
 *   const sdp = await media.answerIvr(callSid, aTag, sdpFromA, { callerSide: { profile } });
 *   //   calls the platform places: offerIvr(callSid, bTag) -> SDP for the INVITE; completeIvr(callSid, bTag, sdp)
 *   //   Dial after IVR: offerFromIvr(callSid, aTag, bTag) -> SDP for B; then answer(callSid, aTag, bTag, sdpFromB)
 *   const { ttsSeconds, tier, completed } = await media.say(callSid, aTag, text, { voice, language, loop, signal });
 *   const { durationMs, completed } = await media.playFile(callSid, aTag, path, { signal });   // or playUrl(url)
 *   media.stopPlayback(callSid, aTag);                                              // barge-in
 *   const rec = await media.record(callSid, aTag, { maxLengthSec, silenceTimeoutSec, signal }); // {path, durationSec, sizeBytes, reason}
 *   await media.startSessionRecording(callSid, [aTag, bTag]);  // RecordSession; stopSessionRecording(callSid) -> RecordingResult
 *   const amd = new MachineDetector({ mode: 'Enable', clock });  // push(20 ms frame) / poll() -> result once
 *   media.on('dtmf', ({ callId, legTag, digit, durationMs, source }) => ...);   // source: undefined (rtpengine log), 'rtp-event', 'inband'
 *   const { sessionRecording } = await media.deleteSession(callSid);               // at hangup; safe twice
 *   // The same per call, as an object (mediasoup's shape): its close() cascades to IVR endpoints, playbacks and
 *   // the recorder, rejects requests still waiting on the engine (MEDIA_NO_SESSION), and is safe twice.
 *   const session = media.openSession(callSid);   // or media.session(callSid) -> MediaSession | undefined
 *   await session.play(aTag, path, { signal }); session.on('close', (reason) => ...); await session.close();
 *   media.health();                                                                  // { healthy, engines, sessions }
 *
 * Error codes a verb maps: MEDIA_FETCH_FAILED / MEDIA_DECODE_FAILED (Play -> PLAY.0404 or fallback),
 * MEDIA_UNSUPPORTED_VOICE (Say with an unknown voice/language), MEDIA_NO_ENGINE (no healthy rtpengine),
 * MEDIA_NO_SESSION, MEDIA_TIMEOUT, MEDIA_ENGINE_ERROR, MEDIA_ENGINE_GONE, MEDIA_RECORDING_FAILED.
 */
export { MediaError, type MediaErrorCode } from './errors.js';
export { NgClient, type NgClientOptions, type NgParams, type NgResponse } from './ng-client.js';
export {
  RtpengineSupervisor,
  type RtpengineSupervisorOptions,
  type RtpengineSupervisorEvents,
} from './rtpengine-supervisor.js';
export {
  MediaEngines,
  parseEngineUrl,
  LOCAL_ENGINE_ADDRESS,
  type MediaEngine,
  type MediaEngineStatus,
  type MediaEnginesEvents,
} from './media-engines.js';
export { RedisSupervisor, startCallPersistence, type RedisSupervisorOptions } from './redis-supervisor.js';
export {
  MediaService,
  type MediaServiceOptions,
  type MediaServiceEvents,
  type MediaHealth,
  type MediaEnginePool,
  type SayOptions,
  type SayResult,
} from './media-service.js';
export {
  MediaSession,
  type MediaSessionEvents,
  type MediaSessionCloseReason,
  type MediaSessionOptions,
  type SessionEngine,
  type SessionNgClient,
  type LegRecordOptions,
} from './media-session.js';
export { Playback, type PlaybackOptions, type PlaybackResult } from './playback.js';
export {
  ConferenceMixer,
  MixerParticipant,
  MIX_FRAME,
  type MixerParticipantOptions,
} from './mixer/conference-mixer.js';
export { TickScheduler, type TickStats, type Tickable, type TickSchedulerOptions } from './mixer/tick-scheduler.js';
export { SessionRecorder, type RecordingTarget } from './session-recorder.js';
export { type LegProfile, type LegMediaOptions } from './leg-profiles.js';
export { IvrEndpoint, type RecordingResult, type RecordOptions } from './ivr-endpoint.js';
export { DtmfListener, type DtmfEvent } from './dtmf-listener.js';
export { goertzelAmplitude, goertzelCoefficient } from './goertzel.js';
export {
  MachineDetector,
  MACHINE_DETECTION_DEFAULTS,
  MACHINE_DETECTION_LIMITS,
  ANSWERED_BY,
  AMD_FRAME_SAMPLES,
  type AnsweredBy,
  type MachineDetectionMode,
  type MachineDetectionParams,
  type MachineDetectionResult,
  type MachineDetectionSegment,
  type MachineDetectionReason,
  type MachineDetectorOptions,
} from './machine-detector.js';
export { checkDigits, digitsDurationMs, DIGITS_PATTERN, MAX_DIGITS } from './digit-sender.js';
export {
  SpeechRecognizer,
  EN_US_MODEL,
  type SpeechModel,
  type SpeechResult,
  type RecognizerOptions,
} from './speech/recognizer.js';
export {
  EspeakTtsEngine,
  MAX_TTS_TEXT,
  MAX_TTS_SSML,
  SSML_ELEMENTS,
  type TtsEngine,
  type TtsRequest,
  type TtsResult,
  type TtsSubstitution,
  type VoiceChoice,
} from './tts.js';
export { AudioFetcher, type FetchedAudio } from './audio-fetch.js';
export { pcapToStereoWav, findCallPcaps } from './session-recording.js';
export { readPcapUdp, type PcapUdpPacket } from './pcap-reader.js';
export { decodeG711, encodeG711, rms } from './g711.js';
export { parseRtp, buildRtp, type RtpPacket } from './rtp-packet.js';
export { readWav, readWavHeader, writeWav, encodeWav, decodeWav, type PcmAudio, type WavHeader } from './wav.js';
export {
  audioEndpoint,
  rtpmaps,
  sdpAttribute,
  plainAudioSdp,
  keepCodecs,
  type AudioCodec,
  type AudioEndpoint,
} from './sdp.js';
export { bencode, bdecode, type BValue } from './bencode.js';
export {
  convertToPlaybackWav,
  MAX_PLAYBACK_SECONDS,
  sniffAudioFormat,
  soxReadableFormats,
  AudioImportError,
  type AudioFormat,
  type ImportedAudio,
} from './asset-import.js';
export { AssetLibrary, AssetError, MAX_ASSET_BYTES } from './asset-library.js';
export { RecordingRetention, type RecordingRetentionOptions } from './retention.js';
export {
  LocalMediaStorage,
  S3MediaStorage,
  mediaStorageFor,
  type MediaStorage,
  type StorageBackendName,
} from './media-storage.js';
export { S3Client, S3Error, type S3Options } from './s3-client.js';
export {
  LegAudioPort,
  FRAME_BYTES,
  MediaStream,
  MAX_SEND_BUFFER_BYTES,
  streamRequestUrl,
  type MediaStreamOptions,
  type MediaStreamStats,
  type StreamTrack,
} from './streams/index.js';
export {
  NOTICES,
  NOTICE_LANGUAGES,
  NOTICE_VOICE,
  notice,
  noticeLanguageOf,
  type NoticeKey,
  type NoticeArgs,
  type NoticeLanguage,
} from './notices.js';
export { spokenAmount, swahiliNumber, englishNumber } from './spoken-numbers.js';
