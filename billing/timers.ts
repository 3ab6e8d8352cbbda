import { systemClock, type Clock } from '../kit/index.js';

/**
 * The slice of the kit's one clock the credit monitor, its watchdogs and the reconcile sweep use, injected so tests
 * drive time; each periodic job is named ('credit-tick', 'credit-watchdog', ...) so a test can stall one.
 */
export type MonitorTimers = Pick<Clock, 'now' | 'every'>;

export const systemTimers: MonitorTimers = systemClock;
