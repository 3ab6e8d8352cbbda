import type { Db } from './db.js';
import { normaliseCall, type CallRow } from './calls.js';

export interface CdrRange {
  /** Inclusive lower bound on created_at (ISO-8601, UTC). */
  fromIso: string;
  /** Exclusive upper bound on created_at. */
  toIso: string;
  /** Rows read per query (one page is all that is held in memory). */
  pageSize?: number;
}

/**
 * Every CDR created in [from, to), oldest first, a page at a time: keyset pagination on (created_at, id) (migration
 * 017's index), so each query starts where the last ended, whatever the number of rows, and memory holds one page.
 */
export async function* cdrPages(db: Db, range: CdrRange): AsyncGenerator<CallRow[]> {
  const size = Math.min(Math.max(range.pageSize ?? 1000, 1), 10_000);
  let after: { created_at: string; id: string } | undefined;
  for (;;) {
    const q = db('calls')
      .where('created_at', '>=', range.fromIso)
      .where('created_at', '<', range.toIso)
      .orderBy([
        { column: 'created_at', order: 'asc' },
        { column: 'id', order: 'asc' },
      ])
      .limit(size);
    if (after) {
      const { created_at, id } = after;
      q.where((w) =>
        w.where('created_at', '>', created_at).orWhere((x) => x.where({ created_at }).where('id', '>', id)),
      );
    }
    const rows = (await q).map(normaliseCall);
    if (rows.length > 0) yield rows;
    if (rows.length < size) return;
    const last = rows[rows.length - 1];
    after = { created_at: last.created_at, id: last.id };
  }
}

/** Status callbacks still waiting for delivery (the outbox backlog of GET /metrics). */
export async function countOutboxBacklog(db: Db): Promise<number> {
  const [r] = await db('event_outbox').where({ state: 'pending' }).count({ n: '*' });
  return Number(r?.n ?? 0);
}
