export { SwitchCallEngine, type CallEngineDeps } from './engine.js';
export { CallLifecycle } from './lifecycle.js';
export { AssetLibrary, AssetError, MAX_ASSET_BYTES } from './asset-library.js';
export { RecordingRetention, type RecordingRetentionOptions } from './retention.js';
export {
  LocalMediaStorage,
  S3MediaStorage,
  mediaStorageFor,
  type MediaStorage,
  type StorageBackendName,
} from './media-storage.js';
export { S3Client, S3Error, type S3Options } from './s3-client.js';
