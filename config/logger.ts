/** The root logger lives in the kit (kit/logger.ts), below every room, so the kit's own emitter can log too. */
export { roomLogger, setLogLevel, replaceRootLogger, type Logger } from '../kit/index.js';
