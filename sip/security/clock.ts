import type { Clock } from '../../kit/index.js';

/**
 * Time as the gate sees it: the slice of the kit's one `Clock` it uses, injected so tests move a fake clock
 * instead of sleeping (STYLE.md, point 4). `every` runs periodic work (sweeps, polling the ban table); its handle
 * does not keep the process alive.
 */
export type SecurityClock = Pick<Clock, 'now' | 'every'>;

export { systemClock } from '../../kit/index.js';
