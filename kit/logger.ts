/**
 * The process's root logger (pino, to stderr, quiet by default: SIMU_LOG_LEVEL or config's log level), one child per
 * room. It lives in the kit, below every room, so config/ re-exports it and the kit's emitter can use it too.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

let root: Logger = pino(
  { level: process.env.SIMU_LOG_LEVEL ?? 'warn', base: { pid: process.pid } },
  pino.destination(2),
);

/** Set the level once the config is loaded (the logger exists before, so modules can hold children). */
export function setLogLevel(level: string): void {
  root.level = level;
}

/** One logger per room, e.g. `roomLogger('sip')`; add call sid or transaction id as child fields. */
export function roomLogger(room: string): Logger {
  return root.child({ room });
}

/** For tests that want to capture log lines. */
export function replaceRootLogger(logger: Logger): void {
  root = logger;
}
