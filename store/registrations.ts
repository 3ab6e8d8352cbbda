/**
 * Kept UDP registrations (migration 010). The registrar writes an end-user's whole set after every change, and
 * reads the live ones back at start-up. Rows only: the Binding shape lives in sip/location.ts.
 */
import type { Db } from './db.js';

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
}

const toRow = (r: Record<string, unknown>): RegistrationRow => ({
  ...(r as unknown as RegistrationRow),
  source_port: Number(r.source_port),
  cseq: Number(r.cseq),
  registered_at: Number(r.registered_at),
  expires_at: Number(r.expires_at),
});

/** Replaces the kept registrations of one end-user with `rows`, in one transaction. */
export async function replaceRegistrations(db: Db, endUserId: string, rows: RegistrationRow[]): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('registrations').where({ end_user_id: endUserId }).delete();
    if (rows.length > 0) await trx('registrations').insert(rows);
  });
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
