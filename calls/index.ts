export { SwitchCallEngine, type CallEngineDeps } from './engine.js';
export type { CallEngine, CallControlOutcome, OriginateOptions } from './call-engine.js';
export type { MachineDetectionRequest } from './machine-detection.js';
export { CallLifecycle } from './lifecycle.js';
export type { ConferenceControl, ConferenceView, ParticipantView } from './conference/index.js';
export type { QueueDirectory, QueueInfo, QueueMemberInfo } from './queue/queue-registry.js';
export { publishMediaEngineState } from './media-engine-events.js';
export {
  NodeRoutedCallEngine,
  NodeUnreachableError,
  COMMAND_TIMEOUT_MS,
  type NodeCommand,
  type NodeReply,
} from './node-routing.js';
