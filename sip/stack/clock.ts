/**
 * Time as an injected dependency (STYLE.md 4): the transaction state machines take the kit's one `Clock`, so tests
 * drive them with `ManualClock` instead of sleeping.
 */
export { ManualClock, systemClock, type Clock, type TimerHandle } from '../../kit/index.js';
