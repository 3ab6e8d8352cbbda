export * from './dialog.js';
export * from './refer.js';
export * from './session-timer.js';
