export { SwitchCallEngine, type CallEngineDeps } from './engine.js';
export type { CallEngine, CallControlOutcome } from './call-engine.js';
export { CallLifecycle } from './lifecycle.js';
