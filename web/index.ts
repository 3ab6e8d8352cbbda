export { Portal, SESSION_COOKIE, type PortalDeps } from './server.js';
