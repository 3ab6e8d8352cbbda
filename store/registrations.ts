/**
 * Kept UDP registrations (migration 010). The registrar writes end-users' whole sets after changes, many at a time
 * (sip/registration-writer.ts), and reads the live ones back at start-up. Rows only: the Binding shape lives in sip/location.ts.
 */
import type { Db } from './db.js';
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
}

const toRow = (r: Record<string, unknown>): RegistrationRow => ({
  ...(r as unknown as RegistrationRow),
  source_port: Number(r.source_port),
  cseq: Number(r.cseq),
  registered_at: Number(r.registered_at),
  expires_at: Number(r.expires_at),
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
 * of last registration on end_users, and their kept registrations replaced. Multi-row statements, cut into chunks
 * of 64, 8 and 1 so that only a few statement texts exist (each is prepared once), whatever the batch size.
 */
export async function writeRegistrations(db: Db, writes: RegistrationWrite[]): Promise<void> {
  if (writes.length === 0) return;
  await db.transaction(async (trx) => {
    const timed = writes.filter((w) => w.lastRegisteredAt !== undefined && w.state === 'registered');
    for (const part of chunks(timed)) {
      const when = part.map(() => 'when ? then ?').join(' ');
      await trx('end_users')
        .whereIn(
          'id',
          part.map((w) => w.endUserId),
        )
        .update({
          registration_state: 'registered',
          last_registered_at: trx.raw(
            `case id ${when} end`,
            part.flatMap((w) => [w.endUserId, w.lastRegisteredAt!]),
          ),
        });
    }
    const done = new Set(timed);
    for (const state of ['registered', 'unregistered'] as const) {
      const plain = writes.filter((w) => w.state === state && !done.has(w)).map((w) => w.endUserId);
      for (const ids of chunks(plain)) {
        await trx('end_users').whereIn('id', ids).update({ registration_state: state });
      }
    }
    for (const ids of chunks(writes.map((w) => w.endUserId))) {
      await trx('registrations').whereIn('end_user_id', ids).delete();
    }
    for (const rows of chunks(writes.flatMap((w) => w.rows))) await trx('registrations').insert(rows);
  });
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
