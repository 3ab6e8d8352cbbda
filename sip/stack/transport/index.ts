export * from './flow.js';
export * from './transport-layer.js';
