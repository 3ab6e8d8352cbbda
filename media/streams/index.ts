/** Media streams and the caller's audio as frames: see media/README.md, "Streams". */
export { LegAudioPort, FRAME_BYTES, type LegEndpoint } from './audio-port.js';
export {
  MediaStream,
  MAX_SEND_BUFFER_BYTES,
  STREAM_CONNECT_TIMEOUT_MS,
  streamRequestUrl,
  type MediaStreamOptions,
  type MediaStreamStats,
} from './media-stream.js';
export { parseInbound, MAX_INBOUND_MESSAGE_BYTES, type InboundMessage, type StreamTrack } from './messages.js';
export { Playout, MAX_QUEUED_BYTES } from './playout.js';
export { FrameTicker } from './frame-ticker.js';
