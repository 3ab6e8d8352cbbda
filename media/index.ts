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
