export * from './digest.js';
export * from './digest-server.js';
export * from './digest-client.js';
export * from './bearer.js';
