/**
 * The media room: rtpengine (supervised locally or external), speech, playback, recording, DTMF.
 * See media/README.md for the design of IVR legs and recordings.
 */
export { MediaError, type MediaErrorCode } from './errors.js';
export { NgClient, type NgClientOptions, type NgParams, type NgResponse } from './ng-client.js';
export {
  RtpengineSupervisor,
  type RtpengineSupervisorOptions,
  type RtpengineSupervisorEvents,
} from './rtpengine-supervisor.js';
export { MediaEngines, parseEngineUrl, type MediaEngine } from './media-engines.js';
export { MediaService, type MediaServiceOptions, type MediaServiceEvents, type MediaHealth } from './media-service.js';
export type { PlaybackOptions, PlaybackResult, SayOptions, LegRecordOptions } from './media-service.js';
export { type LegProfile, type LegMediaOptions } from './leg-profiles.js';
export { IvrEndpoint, type RecordingResult, type RecordOptions } from './ivr-endpoint.js';
export { DtmfListener, type DtmfEvent } from './dtmf-listener.js';
export { EspeakTtsEngine, type TtsEngine, type TtsRequest, type TtsResult } from './tts.js';
export { AudioFetcher, type FetchedAudio } from './audio-fetch.js';
export { pcapToStereoWav, findCallPcaps } from './session-recording.js';
export { readPcapUdp, type PcapUdpPacket } from './pcap-reader.js';
export { decodeG711, encodeG711, rms } from './g711.js';
export { parseRtp, buildRtp, type RtpPacket } from './rtp-packet.js';
export { readWav, writeWav, encodeWav, decodeWav, type PcmAudio } from './wav.js';
export { audioEndpoint, rtpmaps, sdpAttribute, plainAudioSdp, type AudioCodec, type AudioEndpoint } from './sdp.js';
export { bencode, bdecode, type BValue } from './bencode.js';
