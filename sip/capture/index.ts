export { SipCapture, sipTraceToken, type SipCaptureOptions, type CaptureFigures } from './sip-capture.js';
export { HepSender, type HepFigures } from './hep-sender.js';
export { encodeHep3, HEP_CHUNK, type HepMessage } from './hep.js';
export { writePcap } from './pcap-writer.js';
export type { CapturedMessage } from './sip-ladder.js';
