export * from './flow.js';
export { tapTime, type MessageTap, type TappedMessage } from './tap.js';
export * from './transport-layer.js';
export { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits, type SourceAdmission } from './guard.js';
export { UdpFront, type UdpFrontOptions, type UdpGate } from './udp-front.js';
