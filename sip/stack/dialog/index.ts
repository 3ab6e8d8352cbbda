export * from './dialog.js';
