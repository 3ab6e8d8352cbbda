export { SwitchCallEngine, type CallEngineDeps } from './switch-call-engine.js';
export type { CallEngine, CallControlOutcome, OriginateOptions } from './call-engine.js';
export type { MachineDetectionRequest } from './machine-detection.js';
export { originateCall, OriginateRefusedError, type OriginateRequest } from './flows/originate-request.js';
export { CallLifecycle } from './call-lifecycle.js';
export type { ConferenceControl, ConferenceView, ParticipantView } from './conference/index.js';
export type { QueueDirectory, QueueInfo, QueueMemberInfo } from './queue/queue-registry.js';
export { publishMediaEngineState } from './media-engine-events.js';
export {
  NodeRoutedCallEngine,
  NodeUnreachableError,
  COMMAND_TIMEOUT_MS,
  type NodeCommand,
  type NodeReply,
} from './node-routed-call-engine.js';
