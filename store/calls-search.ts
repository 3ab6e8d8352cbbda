import { inTransaction, isPostgres, type Db } from './db.js';
import { runSql, selectRows } from './fixed-sql.js';

/**
 * The calls search index (SQLite's FTS5 table calls_search, migrations 005 and 027) is written in batches: every
 * calls row with a rowid at or below calls_search_state.indexed_rowid (the watermark) is in it, the rows past it
 * are not yet. A search reads the index and the rows past the watermark (`CALLS_SEARCH_CANDIDATES`), so it is
 * exact whatever the indexer has done. The switch's store indexes every half second (store/db.ts); anything else
 * that writes many calls (a fixture) may call indexCallsSearch itself.
 */

/** The rowids a search must test: those the index matches, and every row not indexed yet. One `?`: the match. */
export const CALLS_SEARCH_CANDIDATES =
  'select rowid from calls_search where calls_search match ? ' +
  'union all select rowid from calls where rowid > (select indexed_rowid from calls_search_state)';

/** Rows one run indexes at most: a run after a backlog holds the writer for a bounded time (docs/performance.md). */
export const CALLS_SEARCH_BATCH = 1000;

const STATE = 'select (select max(rowid) from calls) as "top", "indexed_rowid" as "mark" from "calls_search_state"';
const INDEX_RANGE =
  `insert into calls_search(rowid, numbers) select rowid, from_number || ' ' || to_number from calls ` +
  'where rowid > ? and rowid <= ? order by rowid';
const MOVE_MARK = 'update "calls_search_state" set "indexed_rowid" = ? where "indexed_rowid" = ?';

/**
 * Indexes up to `maxRows` calls past the watermark and moves it past them, in one transaction (nothing else writes
 * between reading the watermark and moving it). Returns how many rowids it covered; 0 on PostgreSQL.
 */
export async function indexCallsSearch(db: Db, maxRows: number = CALLS_SEARCH_BATCH): Promise<number> {
  if (isPostgres(db)) return 0;
  const [state] = await selectRows(db, STATE, []);
  if (state === undefined || state.top == null || Number(state.top) <= Number(state.mark)) return 0;
  return inTransaction(db, async (tx) => {
    const [s] = await selectRows(tx, STATE, []);
    const mark = Number(s?.mark);
    const top = Math.min(Number(s?.top ?? mark), mark + maxRows);
    if (!(top > mark)) return 0;
    await runSql(tx, INDEX_RANGE, [mark, top], 'calls_search');
    await runSql(tx, MOVE_MARK, [top, mark], 'calls_search_state');
    return top - mark;
  });
}

/** How many calls rows are past the watermark (not in the index yet); 0 on PostgreSQL. For tests and benches. */
export async function callsSearchBacklog(db: Db): Promise<number> {
  if (isPostgres(db)) return 0;
  const [r] = await selectRows(
    db,
    'select count(*) as "n" from "calls" where rowid > (select "indexed_rowid" from "calls_search_state")',
    [],
  );
  return Number(r?.n ?? 0);
}

/** How often the switch indexes the calls past the watermark: a search reads at most about this much tail. */
export const CALLS_SEARCH_INTERVAL_MS = 500;

/**
 * Indexes the calls past the watermark every `intervalMs` (the switch's store; a no-op on PostgreSQL). A failed run
 * is told to `onError` and the next one retries; rows stay findable meanwhile (the tail is searched).
 */
export function startCallsSearchIndexer(
  db: Db,
  onError: (err: unknown) => void,
  intervalMs = CALLS_SEARCH_INTERVAL_MS,
): { stop(): void } {
  if (isPostgres(db)) return { stop() {} };
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    indexCallsSearch(db)
      .catch(onError)
      .finally(() => (running = false));
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
