import { pino } from 'pino';

/**
 * The one logger of the tests: silent, unless SIMU_TEST_LOG names a level (e.g. SIMU_TEST_LOG=debug to see what a
 * failing test's room logged). MEDIA_TEST_LOG, the media room's older name for it, still works.
 */
export const quietLogger = pino({ level: process.env.SIMU_TEST_LOG ?? process.env.MEDIA_TEST_LOG ?? 'silent' });
