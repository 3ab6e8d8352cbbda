export { SwitchCallEngine, type CallEngineDeps } from './engine.js';
export { CallLifecycle } from './lifecycle.js';
export { AssetLibrary, AssetError, MAX_ASSET_BYTES } from './asset-library.js';
export { RecordingRetention, type RecordingRetentionOptions } from './retention.js';
export { LocalMediaStorage, type MediaStorage } from './media-storage.js';
