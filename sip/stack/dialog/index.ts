export * from './dialog.js';
export * from './refer.js';
