export { Portal, SESSION_COOKIE, type PortalDeps } from './server.js';
export { Console, CONSOLE_COOKIE, type ConsoleDeps } from './console.js';
export { type ConsoleLive } from './console-api.js';
