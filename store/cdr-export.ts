import type { Db } from './db.js';
import { normaliseCall, type CallRow } from './calls.js';
import { firstRow, selectRows } from './fixed-sql.js';

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
    const within = '"created_at" >= ? and "created_at" < ?';
    const order = ' order by "created_at" asc, "id" asc limit ?';
    const page = after
      ? await selectRows(
          db,
          `select * from "calls" where ${within} and ("created_at" > ? or ("created_at" = ? and "id" > ?))${order}`,
          [range.fromIso, range.toIso, after.created_at, after.created_at, after.id, size],
        )
      : await selectRows(db, `select * from "calls" where ${within}${order}`, [range.fromIso, range.toIso, size]);
    const rows = page.map(normaliseCall);
    if (rows.length > 0) yield rows;
    if (rows.length < size) return;
    const last = rows[rows.length - 1];
    after = { created_at: last.created_at, id: last.id };
  }
}

/** Status callbacks still waiting for delivery (the outbox backlog of GET /metrics). */
export async function countOutboxBacklog(db: Db): Promise<number> {
  // The literal state lets both stores count the pending rows' partial index (event_outbox_due).
  const r = await firstRow(db, 'select count(*) as "n" from "event_outbox" where "state" = \'pending\'', []);
  return Number(r?.n ?? 0);
}
