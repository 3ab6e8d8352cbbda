export * from './timers.js';
export * from './transaction.js';
export * from './invite-client.js';
export * from './invite-server.js';
export * from './non-invite-client.js';
export * from './non-invite-server.js';
export * from './transaction-layer.js';
