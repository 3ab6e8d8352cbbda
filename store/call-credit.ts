import { TurnBatch } from '../kit/index.js';
import { isPostgres, type Db, type Tx } from './db.js';
import { insertRows, runSql, runSqlCount, selectRows } from './fixed-sql.js';

/**
 * Live credit state of an answered call (table `call_credit`, billing/credit-monitor): from answer until the call
 * is settled. The reconcile sweep bills a call whose process died from it; a watchdog reads its heartbeat; monitors
 * on other nodes read what it has committed.
 */
export interface CallCreditRow {
  call_id: string;
  account_id: string;
  node_id: string | null;
  rate_cents_per_minute: number;
  tts_cents: number;
  tts_seconds: number;
  committed_cents: number;
  answered_at: string;
  heartbeat_at: string;
}

const normalise = (r: any): CallCreditRow => ({
  ...r,
  rate_cents_per_minute: Number(r.rate_cents_per_minute),
  tts_cents: Number(r.tts_cents),
  tts_seconds: Number(r.tts_seconds),
  committed_cents: Number(r.committed_cents),
});

export interface NewCallCredit {
  call_id: string;
  account_id: string;
  node_id: string | null;
  rate_cents_per_minute: number;
  answered_at: string;
  heartbeat_at: string;
}

export async function insertCallCredit(db: Db | Tx, row: NewCallCredit): Promise<void> {
  await insertRows(db, 'call_credit', [row as unknown as Record<string, unknown>]);
}

/**
 * On PostgreSQL the credit rows of calls answered within CREDIT_GAP_MS of each other are inserted by one statement
 * (a statement per answered leg was a round trip each); a batch that fails is inserted row by row, so one bad row
 * fails alone. SQLite's writes share a commit already and cost no round trip: one statement per row.
 */
const CREDIT_GAP_MS = 5;
/** Rows per statement at most (a text per row count, each prepared once per connection). */
const CREDIT_ROWS_MAX = 64;
const creditBatches = new WeakMap<Db, TurnBatch<NewCallCredit, Error | undefined>>();

/** Records an answered call's live credit row (the credit monitor's, at answer). */
export async function recordCallCredit(db: Db, row: NewCallCredit): Promise<void> {
  if (!isPostgres(db)) return insertCallCredit(db, row);
  let batch = creditBatches.get(db);
  if (batch === undefined) {
    batch = new TurnBatch((rows) => insertCreditRows(db, rows), { minGapMs: CREDIT_GAP_MS });
    creditBatches.set(db, batch);
  }
  const failed = await batch.add(row);
  if (failed) throw failed;
}

async function insertCreditRows(db: Db, rows: readonly NewCallCredit[]): Promise<(Error | undefined)[]> {
  const out: (Error | undefined)[] = [];
  for (let i = 0; i < rows.length; i += CREDIT_ROWS_MAX) {
    const chunk = rows.slice(i, i + CREDIT_ROWS_MAX);
    try {
      await insertRows(db, 'call_credit', chunk as unknown as Record<string, unknown>[]);
      out.push(...chunk.map(() => undefined));
    } catch (err) {
      if (chunk.length === 1) out.push(asError(err));
      else for (const row of chunk) out.push(await insertCallCredit(db, row).then(() => undefined, asError));
    }
  }
  return out;
}

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

export async function findCallCredit(db: Db | Tx, callId: string): Promise<CallCreditRow | undefined> {
  const [row] = await selectRows(db, 'select * from "call_credit" where "call_id" = ? limit 1', [callId]);
  return row ? normalise(row) : undefined;
}

/** The speech priced so far on a live call. */
export async function setCallCreditTts(
  db: Db | Tx,
  callId: string,
  ttsCents: number,
  ttsSeconds: number,
): Promise<void> {
  await runSql(
    db,
    'update "call_credit" set "tts_cents" = ?, "tts_seconds" = ? where "call_id" = ?',
    [ttsCents, ttsSeconds, callId],
    { table: 'call_credit', columns: ['tts_cents', 'tts_seconds'] },
  );
}

/** Deleted in the transaction that settles the call; how many rows it deleted (0 or 1). */
export async function deleteCallCredit(db: Db | Tx, callId: string): Promise<number> {
  return runSqlCount(db, 'delete from "call_credit" where "call_id" = ?', [callId], 'call_credit');
}

/**
 * One heartbeat for a batch of calls: `heartbeat_at` and each call's committed cents, in one statement. Returns
 * how many rows it updated (fewer than given when some were settled elsewhere). Keep batches to a few hundred.
 *
 * An UPDATE joined to the batch's VALUES (SQLite >= 3.33, PostgreSQL): each row found by its key, not a
 * `CASE call_id WHEN ? THEN ? ...` over the batch, which SQLite walks for every row (docs/performance.md).
 */
export async function heartbeatCallCredits(
  db: Db,
  at: string,
  calls: { callId: string; committedCents: number }[],
): Promise<number> {
  if (!calls.length) return 0;
  const sql = heartbeatSql(calls.length, isPostgres(db));
  const bindings: unknown[] = [at];
  for (const c of calls) bindings.push(c.callId, c.committedCents);
  return runSqlCount(db, sql, bindings, { table: 'call_credit', columns: ['heartbeat_at', 'committed_cents'] });
}

const heartbeatTexts = new Map<string, string>();
function heartbeatSql(n: number, pg: boolean): string {
  const key = `${n}${pg}`;
  let sql = heartbeatTexts.get(key);
  if (sql === undefined) {
    // SQLite names a VALUES table's columns column1, column2; PostgreSQL takes them from the alias.
    sql =
      'update "call_credit" set "heartbeat_at" = ?, "committed_cents" = v.column2 from (values ' +
      Array(n).fill('(?, CAST(? AS BIGINT))').join(', ') +
      `) as v${pg ? '(column1, column2)' : ''} where "call_credit"."call_id" = v.column1`;
    if (heartbeatTexts.size < 64) heartbeatTexts.set(key, sql);
  }
  return sql;
}

/** The heartbeats of those of these calls that still have a credit row. */
export async function callCreditHeartbeats(
  db: Db,
  callIds: string[],
): Promise<{ call_id: string; heartbeat_at: string }[]> {
  if (callIds.length === 0) return [];
  const rows = await selectRows(
    db,
    `select "call_id", "heartbeat_at" from "call_credit" where "call_id" in (${callIds.map(() => '?').join(', ')})`,
    callIds,
  );
  return rows as { call_id: string; heartbeat_at: string }[];
}
