import type { Db } from './db.js';
import { newId, nowIso } from './ids.js';
import { ConflictError, isUniqueViolation } from './errors.js';

/** Documented values of registration_state. */
export type RegistrationState = 'registered' | 'unregistered';

export interface EndUserRow {
  id: string;
  account_id: string;
  email: string;
  display_name: string;
  extension_number: string;
  is_active: boolean;
  registration_state: RegistrationState;
  last_registered_at: string | null;
  deleted_at: string | null;
  created_at: string;
  /** Call handling (issue 19, item 3): calls are not rung while set (voicemail, or busy). */
  dnd: boolean;
  /** Forward targets: an extension of the account or an E.164 number; null when unset. */
  forward_always: string | null;
  forward_busy: string | null;
  forward_no_answer: string | null;
  /** Seconds the phones ring before no-answer forwarding or voicemail takes the call. */
  no_answer_seconds: number;
  voicemail_enabled: boolean;
  /** The account asset played as the mailbox greeting; null: a spoken default. */
  voicemail_greeting: string | null;
}

/** The call-handling fields of an end-user, as the API changes them. */
export type CallHandlingPatch = Partial<
  Pick<
    EndUserRow,
    | 'dnd'
    | 'forward_always'
    | 'forward_busy'
    | 'forward_no_answer'
    | 'no_answer_seconds'
    | 'voicemail_enabled'
    | 'voicemail_greeting'
  >
>;

/** Extensions are assigned by the service per account, from this number upwards. */
export const FIRST_EXTENSION = 1001;

const normalise = (r: any): EndUserRow => ({
  ...r,
  is_active: Boolean(r.is_active),
  dnd: Boolean(r.dnd),
  voicemail_enabled: Boolean(r.voicemail_enabled),
  no_answer_seconds: Number(r.no_answer_seconds ?? 20),
});

export class DuplicateEmailError extends ConflictError {
  constructor() {
    super('an end-user with this email already exists in the account', 'END_USER_EMAIL_TAKEN');
  }
}

/**
 * Creates an end-user with the next free extension of the account (highest + 1, from 1001). Two concurrent
 * creations may pick the same extension; the unique index refuses the second, which then retries.
 */
export async function insertEndUser(
  db: Db,
  accountId: string,
  email: string,
  displayName: string,
): Promise<EndUserRow> {
  for (let attempt = 0; ; attempt++) {
    const existing = await db('end_users').where({ account_id: accountId, email }).first('id');
    if (existing) throw new DuplicateEmailError();
    const rows = await db('end_users').where({ account_id: accountId }).select('extension_number');
    const highest = rows.reduce(
      (m: number, r: { extension_number: string }) => Math.max(m, Number(r.extension_number) || 0),
      FIRST_EXTENSION - 1,
    );
    const row = {
      id: newId(),
      account_id: accountId,
      email,
      display_name: displayName,
      extension_number: String(highest + 1),
      is_active: true,
      registration_state: 'unregistered',
      created_at: nowIso(),
    };
    try {
      await db('end_users').insert(row);
      return normalise(await db('end_users').where({ id: row.id }).first());
    } catch (e) {
      if (!isUniqueViolation(e) || attempt >= 10) throw e;
    }
  }
}

export async function findEndUser(db: Db, accountId: string, id: string): Promise<EndUserRow | undefined> {
  const r = await db('end_users').where({ account_id: accountId, id }).whereNull('deleted_at').first();
  return r ? normalise(r) : undefined;
}

export async function findEndUserAnyAccount(db: Db, id: string): Promise<EndUserRow | undefined> {
  const r = await db('end_users').where({ id }).whereNull('deleted_at').first();
  return r ? normalise(r) : undefined;
}

export async function listEndUsers(db: Db, accountId: string): Promise<EndUserRow[]> {
  return (
    await db('end_users').where({ account_id: accountId }).whereNull('deleted_at').orderBy('extension_number')
  ).map(normalise);
}

export async function updateEndUser(
  db: Db,
  accountId: string,
  id: string,
  patch: { display_name?: string; is_active?: boolean } & CallHandlingPatch,
): Promise<EndUserRow | undefined> {
  if (Object.keys(patch).length > 0)
    await db('end_users').where({ account_id: accountId, id }).whereNull('deleted_at').update(patch);
  return findEndUser(db, accountId, id);
}

/**
 * Deletes an end-user and its phone tokens (so every token stops working at once). The row is removed, not
 * soft-deleted, so the email can be used again; call records keep the id as history.
 */
export async function deleteEndUser(db: Db, accountId: string, id: string): Promise<boolean> {
  return db.transaction(async (trx) => {
    const u = await trx('end_users').where({ account_id: accountId, id }).first('id');
    if (!u) return false;
    await trx('phone_tokens').where({ account_id: accountId, end_user_id: id }).delete();
    await trx('end_users').where({ account_id: accountId, id }).delete();
    return true;
  });
}

/**
 * The end-user with this extension in this account (not deleted); with activeOnly, only an enabled one. One indexed
 * query, made for an unknown account ('') too (the registrar's lookups must not tell accounts apart by timing).
 */
export async function findEndUserByExtension(
  db: Db,
  accountId: string,
  extension: string,
  opts: { activeOnly?: boolean } = {},
): Promise<EndUserRow | undefined> {
  const q = db('end_users').where({ account_id: accountId, extension_number: extension }).whereNull('deleted_at');
  if (opts.activeOnly) q.where({ is_active: true });
  const r = await q.first();
  return r ? normalise(r) : undefined;
}

/** The end-user's registration state as the registrar sees it (and when it last registered, on a REGISTER). */
export async function setRegistrationState(
  db: Db,
  id: string,
  state: RegistrationState,
  lastRegisteredAt?: string,
): Promise<void> {
  await db('end_users')
    .where({ id })
    .update(
      lastRegisteredAt
        ? { registration_state: state, last_registered_at: lastRegisteredAt }
        : { registration_state: state },
    );
}

/**
 * At the registrar's start, after its registrations were pruned: in one transaction, every end-user unregistered
 * except these (whose kept registrations were restored), which are registered, and those with a live binding of
 * another node.
 */
export async function resetRegistrationStates(
  db: Db,
  registeredIds: Iterable<string>,
  nowMs = Date.now(),
): Promise<void> {
  const ids = [...new Set(registeredIds)];
  await db.transaction(async (trx) => {
    // End-users with a live binding another node holds stay registered.
    await trx('end_users')
      .where({ registration_state: 'registered' })
      .whereNotExists((q) =>
        q
          .select(trx.raw('1'))
          .from('registrations as r')
          .whereRaw('r.end_user_id = end_users.id')
          .where('r.expires_at', '>', nowMs)
          .whereNull('r.unreachable_at'),
      )
      .update({ registration_state: 'unregistered' });
    for (let i = 0; i < ids.length; i += 500) {
      await trx('end_users')
        .whereIn('id', ids.slice(i, i + 500))
        .update({ registration_state: 'registered' });
    }
  });
}
