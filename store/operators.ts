import type { Db } from './db.js';
import { newId } from './ids.js';

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
  at: string;
  actor: string;
  action: string;
  target: string;
  detail: string;
  ok: boolean;
}

const operator = (r: any): OperatorRow => ({ ...r, totp_last_step: Number(r.totp_last_step) });
const audit = (r: any): AuditRow => ({ ...r, ok: Boolean(r.ok) });

export async function insertOperator(db: Db, row: OperatorRow): Promise<void> {
  await db('operators').insert(row);
}

/** By email as stored (the caller lower-cases and trims). */
export async function findOperatorByEmail(db: Db, email: string): Promise<OperatorRow | undefined> {
  const r = await db('operators').where({ email }).first();
  return r ? operator(r) : undefined;
}

export async function findOperator(db: Db, id: string): Promise<OperatorRow | undefined> {
  const r = await db('operators').where({ id }).first();
  return r ? operator(r) : undefined;
}

/** Records an accepted time step only if it is later than the last one (one conditional update: no replay race). */
export async function advanceOperatorTotpStep(db: Db, id: string, step: number): Promise<boolean> {
  return (
    (await db('operators').where({ id }).andWhere('totp_last_step', '<', step).update({ totp_last_step: step })) === 1
  );
}

let lastAuditMs = 0;

/**
 * The entry's time, strictly later than this process's previous entry: two actions in one millisecond keep their
 * order in the log (ordered by `at`; the id is random), at the cost of a millisecond's shift.
 */
function nextAuditAt(): string {
  lastAuditMs = Math.max(Date.now(), lastAuditMs + 1);
  return new Date(lastAuditMs).toISOString();
}

export async function insertAudit(
  db: Db,
  entry: { actor: string; action: string; target?: string; detail?: unknown; ok?: boolean },
): Promise<AuditRow> {
  const row = {
    id: newId(),
    at: nextAuditAt(),
    actor: entry.actor.slice(0, 340),
    action: entry.action.slice(0, 64),
    target: (entry.target ?? '').slice(0, 200),
    detail: JSON.stringify(entry.detail ?? {}).slice(0, 4000),
    ok: entry.ok ?? true,
  };
  await db('operator_audit').insert(row);
  return row;
}

/** The newest audit entries first; `before` (an `at`) pages back. */
export async function listAudit(db: Db, opts: { limit?: number; before?: string } = {}): Promise<AuditRow[]> {
  const q = db('operator_audit')
    .orderBy([
      { column: 'at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(Math.min(Math.max(opts.limit ?? 100, 1), 500));
  if (opts.before) q.where('at', '<', opts.before);
  return (await q).map(audit);
}
