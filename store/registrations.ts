/**
 * Kept UDP registrations (migration 010). The registrar writes end-users' whole sets after changes, many at a time
 * (sip/registration-writer.ts), and reads the live ones back at start-up. Rows only: the Binding shape lives in sip/location.ts.
 */
import { inTransaction, type Db } from './db.js';
import { insertRows, runSql } from './fixed-sql.js';
import type { RegistrationState } from './end-users.js';

export interface RegistrationRow {
  end_user_id: string;
  contact: string;
  account_id: string;
  extension: string;
  source_address: string;
  source_port: number;
  flow_id: string;
  token_id: string;
  call_id: string;
  cseq: number;
  registered_at: number;
  expires_at: number;
  /** The binding's Path (RFC 3327) as a JSON array of header values; null without one (migration 040). */
  path?: string | null;
}

const toRow = (r: Record<string, unknown>): RegistrationRow => ({
  ...(r as unknown as RegistrationRow),
  source_port: Number(r.source_port),
  cseq: Number(r.cseq),
  registered_at: Number(r.registered_at),
  expires_at: Number(r.expires_at),
  path: typeof r.path === 'string' ? r.path : null,
});

/** One end-user's registration as the registrar has it now: its state, when it last registered, its kept rows. */
export interface RegistrationWrite {
  endUserId: string;
  state: RegistrationState;
  /** ISO-8601; left as stored when undefined. */
  lastRegisteredAt?: string;
  /** Every kept registration of the end-user (the ones stored before are replaced). */
  rows: RegistrationRow[];
}

/**
 * Writes many end-users' registrations in one transaction (the registrar's group commit): their state and time
 * of last registration on end_users, and their kept registrations replaced. Multi-row statements of fixed text, cut
 * into chunks of 64, 8 and 1 so that only a few texts exist (each is prepared once), whatever the batch size; on the
 * switch's SQLite store they run on its connection directly (store/fixed-sql.ts, store/direct-transaction.ts), not
 * through knex's query builder (about a tenth of the switch's CPU per registration in the register bench).
 */
export async function writeRegistrations(db: Db, writes: RegistrationWrite[]): Promise<void> {
  if (writes.length === 0) return;
  await inTransaction(db, async (tx) => {
    const timed = writes.filter((w) => w.lastRegisteredAt !== undefined && w.state === 'registered');
    for (const part of chunks(timed)) {
      await runSql(tx, statement('timed', part.length), [
        ...part.flatMap((w) => [w.endUserId, w.lastRegisteredAt!]),
        ...part.map((w) => w.endUserId),
      ]);
    }
    const done = new Set(timed);
    for (const state of ['registered', 'unregistered'] as const) {
      const plain = writes.filter((w) => w.state === state && !done.has(w)).map((w) => w.endUserId);
      for (const ids of chunks(plain)) await runSql(tx, statement('state', ids.length), [state, ...ids]);
    }
    for (const ids of chunks(writes.map((w) => w.endUserId))) {
      await runSql(tx, statement('delete', ids.length), ids);
    }
    for (const rows of chunks(writes.flatMap((w) => w.rows))) {
      await insertRows(tx, 'registrations', rows as unknown as Record<string, unknown>[]);
    }
  });
}

const texts = new Map<string, string>();

/** The fixed text of one of writeRegistrations' statements for `n` end-users (n is 64, 8 or 1). */
function statement(kind: 'timed' | 'state' | 'delete', n: number): string {
  const key = `${kind}${n}`;
  let sql = texts.get(key);
  if (sql !== undefined) return sql;
  const list = `(${Array(n).fill('?').join(', ')})`;
  if (kind === 'timed') {
    sql =
      `update "end_users" set "registration_state" = 'registered', "last_registered_at" = case "id" ` +
      `${Array(n).fill('when ? then ?').join(' ')} end where "id" in ${list}`;
  } else if (kind === 'state') {
    sql = `update "end_users" set "registration_state" = ? where "id" in ${list}`;
  } else {
    sql = `delete from "registrations" where "end_user_id" in ${list}`;
  }
  texts.set(key, sql);
  return sql;
}

/** `xs` in consecutive pieces of 64, then 8, then 1. */
function* chunks<T>(xs: T[]): Generator<T[]> {
  let i = 0;
  for (const size of [64, 8, 1]) {
    for (; i + size <= xs.length; i += size) yield xs.slice(i, i + size);
  }
}

/**
 * The registrations still live at `nowMs` whose phone token is still valid and whose end-user is still active
 * (a token revoked or an end-user disabled while the switch was down does not come back).
 */
export async function liveRegistrations(db: Db, nowMs: number): Promise<RegistrationRow[]> {
  const nowIso = new Date(nowMs).toISOString();
  const rows = await db('registrations as r')
    .join('phone_tokens as t', 't.id', 'r.token_id')
    .join('end_users as u', 'u.id', 'r.end_user_id')
    .where('r.expires_at', '>', nowMs)
    .whereNull('t.revoked_at')
    .where('t.expires_at', '>', nowIso)
    .where('u.is_active', true)
    .whereNull('u.deleted_at')
    .select('r.*');
  return rows.map(toRow);
}

/** Keeps exactly `keep` (the live ones): expired, revoked or disabled end-users' rows go, in one transaction. */
export async function pruneRegistrations(db: Db, keep: RegistrationRow[]): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('registrations').delete();
    if (keep.length > 0) await trx.batchInsert('registrations', keep, 200);
  });
}
