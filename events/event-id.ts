import { Uuid7Generator } from '../store/index.js';

/**
 * Event ids are UUIDv7 (RFC 9562 §5.7; the generator is the store's, store/ids.ts): 48 bits of Unix milliseconds
 * first, so the text sorts in creation order. The outbox keeps status callbacks of one call in order by comparing
 * these ids, which needs no extra column and still works when two events share a millisecond (a per-process
 * counter in `rand_a`, advancing the timestamp when it overflows, keeps ids monotonic).
 */
export { Uuid7Generator as EventIdGenerator };

export const eventIds = new Uuid7Generator();
