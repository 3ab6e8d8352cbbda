import { isPostgres, sqlOf, type Db } from './db.js';
import { newId, nowIso } from './ids.js';
import { firstRow, insertRows, runSqlCount, selectRows } from './fixed-sql.js';

/** An operator of the platform who may sign in to /console/ (api/operator-users.ts owns the rules). */
export interface OperatorRow {
  id: string;
  email: string;
  password_hash: string;
  totp_secret: string;
  totp_last_step: number;
  created_at: string;
}

/** One operator action (console or CLI): who, what, on what, when, and whether it succeeded. */
export interface AuditRow {
  id: string;
  /** The order the log was written in, across every writer (migration 026): larger is later. */
  seq: number;
  at: string;
  actor: string;
  action: string;
  target: string;
  detail: string;
  ok: boolean;
}

const operator = (r: any): OperatorRow => ({ ...r, totp_last_step: Number(r.totp_last_step) });
const audit = (r: any): AuditRow => ({ ...r, seq: Number(r.seq), ok: Boolean(r.ok) });

export async function insertOperator(db: Db, row: OperatorRow): Promise<void> {
  await insertRows(db, 'operators', [{ ...row }]);
}

/** By email as stored (the caller lower-cases and trims). */
export async function findOperatorByEmail(db: Db, email: string): Promise<OperatorRow | undefined> {
  const r = await firstRow(db, 'select * from "operators" where "email" = ? limit 1', [email]);
  return r ? operator(r) : undefined;
}

export async function findOperator(db: Db, id: string): Promise<OperatorRow | undefined> {
  const r = await firstRow(db, 'select * from "operators" where "id" = ? limit 1', [id]);
  return r ? operator(r) : undefined;
}

/** Records an accepted time step only if it is later than the last one (one conditional update: no replay race). */
export async function advanceOperatorTotpStep(db: Db, id: string, step: number): Promise<boolean> {
  const n = await runSqlCount(
    db,
    'update "operators" set "totp_last_step" = ? where "id" = ? and "totp_last_step" < ?',
    [step, id, step],
    { table: 'operators', columns: ['totp_last_step'] },
  );
  return n === 1;
}

/**
 * Appends an entry to the log. Its `seq` is the next of the whole log, whoever writes: PostgreSQL's sequence (the
 * column's default), or on SQLite max + 1 inside the INSERT itself, which holds the database's one write lock.
 */
export async function insertAudit(
  db: Db,
  entry: { actor: string; action: string; target?: string; detail?: unknown; ok?: boolean },
): Promise<AuditRow> {
  const row = {
    id: newId(),
    at: nowIso(),
    actor: entry.actor.slice(0, 340),
    action: entry.action.slice(0, 64),
    target: (entry.target ?? '').slice(0, 200),
    detail: JSON.stringify(entry.detail ?? {}).slice(0, 4000),
    ok: entry.ok ?? true,
  };
  const cols = Object.keys(row) as (keyof typeof row)[];
  const names = cols.map((c) => `"${c}"`).join(', ');
  const marks = cols.map(() => '?').join(', ');
  const sql = isPostgres(db)
    ? `insert into "operator_audit" (${names}) values (${marks}) returning "seq"`
    : `insert into "operator_audit" (${names}, "seq") values (${marks}, ` +
      '(select coalesce(max("seq"), 0) + 1 from "operator_audit")) returning "seq"';
  const [written] = await sqlOf(db).all(
    sql,
    cols.map((c) => row[c]),
    'operator_audit',
  );
  return { ...row, seq: Number(written!.seq) };
}

/** The newest audit entries first (by `seq`, the order they were written in); `before` (a `seq`) pages back. */
export async function listAudit(db: Db, opts: { limit?: number; before?: number } = {}): Promise<AuditRow[]> {
  const limit = Math.min(Math.max(opts.limit ?? 100, 1), 500);
  const rows =
    opts.before === undefined
      ? await selectRows(db, 'select * from "operator_audit" order by "seq" desc limit ?', [limit])
      : await selectRows(db, 'select * from "operator_audit" where "seq" < ? order by "seq" desc limit ?', [
          opts.before,
          limit,
        ]);
  return rows.map(audit);
}
