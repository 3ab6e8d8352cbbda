export * from './grammar.js';
export * from './uri.js';
export * from './headers.js';
export * from './address.js';
export * from './message.js';
export * from './limits.js';
export * from './parser.js';
export * from './framing.js';
