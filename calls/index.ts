export { SwitchCallEngine, type CallEngineDeps } from './engine.js';
export { CallLifecycle } from './lifecycle.js';
