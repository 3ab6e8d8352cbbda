import { inTransaction, type Db, type Tx } from './db.js';
import { firstRow, insertRows, runSqlCount, selectRows } from './fixed-sql.js';
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
  /** Call handling: calls are not rung while set (voicemail, or busy). */
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
    const existing = await firstRow(db, 'select "id" from "end_users" where "account_id" = ? and "email" = ? limit 1', [
      accountId,
      email,
    ]);
    if (existing) throw new DuplicateEmailError();
    const rows = await selectRows(db, 'select "extension_number" from "end_users" where "account_id" = ?', [accountId]);
    const highest = rows.reduce((m: number, r) => Math.max(m, Number(r.extension_number) || 0), FIRST_EXTENSION - 1);
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
      await insertRows(db, 'end_users', [row]);
      return normalise(await firstRow(db, 'select * from "end_users" where "id" = ? limit 1', [row.id]));
    } catch (e) {
      if (!isUniqueViolation(e) || attempt >= 10) throw e;
    }
  }
}

export async function findEndUser(db: Db, accountId: string, id: string): Promise<EndUserRow | undefined> {
  const r = await firstRow(
    db,
    'select * from "end_users" where "account_id" = ? and "id" = ? and "deleted_at" is null limit 1',
    [accountId, id],
  );
  return r ? normalise(r) : undefined;
}

export async function findEndUserAnyAccount(db: Db, id: string): Promise<EndUserRow | undefined> {
  const r = await firstRow(db, 'select * from "end_users" where "id" = ? and "deleted_at" is null limit 1', [id]);
  return r ? normalise(r) : undefined;
}

export async function listEndUsers(db: Db, accountId: string): Promise<EndUserRow[]> {
  return (
    await selectRows(
      db,
      'select * from "end_users" where "account_id" = ? and "deleted_at" is null order by "extension_number" asc',
      [accountId],
    )
  ).map(normalise);
}

export async function updateEndUser(
  db: Db,
  accountId: string,
  id: string,
  patch: { display_name?: string; is_active?: boolean } & CallHandlingPatch,
): Promise<EndUserRow | undefined> {
  const cols = Object.keys(patch).filter((c) => (patch as Record<string, unknown>)[c] !== undefined);
  if (cols.length > 0)
    await runSqlCount(
      db,
      `update "end_users" set ${cols.map((c) => `"${c}" = ?`).join(', ')} ` +
        'where "account_id" = ? and "id" = ? and "deleted_at" is null',
      [...cols.map((c) => (patch as Record<string, unknown>)[c]), accountId, id],
      { table: 'end_users', columns: cols },
    );
  return findEndUser(db, accountId, id);
}

/**
 * Deletes an end-user and its phone tokens (so every token stops working at once). The row is removed, not
 * soft-deleted, so the email can be used again; call records keep the id as history.
 */
export async function deleteEndUser(db: Db, accountId: string, id: string): Promise<boolean> {
  return inTransaction(db, async (tx: Tx) => {
    const u = await firstRow(tx, 'select "id" from "end_users" where "account_id" = ? and "id" = ? limit 1', [
      accountId,
      id,
    ]);
    if (!u) return false;
    await runSqlCount(
      tx,
      'delete from "phone_tokens" where "account_id" = ? and "end_user_id" = ?',
      [accountId, id],
      'phone_tokens',
    );
    await runSqlCount(tx, 'delete from "end_users" where "account_id" = ? and "id" = ?', [accountId, id], 'end_users');
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
  const base = 'select * from "end_users" where "account_id" = ? and "extension_number" = ? and "deleted_at" is null';
  const r = opts.activeOnly
    ? await firstRow(db, `${base} and "is_active" = ? limit 1`, [accountId, extension, true])
    : await firstRow(db, `${base} limit 1`, [accountId, extension]);
  return r ? normalise(r) : undefined;
}

/** The end-user's registration state as the registrar sees it (and when it last registered, on a REGISTER). */
export async function setRegistrationState(
  db: Db,
  id: string,
  state: RegistrationState,
  lastRegisteredAt?: string,
): Promise<void> {
  if (lastRegisteredAt)
    await runSqlCount(
      db,
      'update "end_users" set "registration_state" = ?, "last_registered_at" = ? where "id" = ?',
      [state, lastRegisteredAt, id],
      { table: 'end_users', columns: ['registration_state', 'last_registered_at'] },
    );
  else
    await runSqlCount(db, 'update "end_users" set "registration_state" = ? where "id" = ?', [state, id], {
      table: 'end_users',
      columns: ['registration_state'],
    });
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
  const writes = { table: 'end_users', columns: ['registration_state'] };
  await inTransaction(db, async (tx) => {
    // End-users with a live binding another node holds stay registered.
    await runSqlCount(
      tx,
      'update "end_users" set "registration_state" = ? where "registration_state" = ? and not exists ' +
        '(select 1 from "registrations" "r" where "r"."end_user_id" = "end_users"."id" and "r"."expires_at" > ? ' +
        'and "r"."unreachable_at" is null)',
      ['unregistered', 'registered', nowMs],
      writes,
    );
    for (let i = 0; i < ids.length; i += 500) {
      const some = ids.slice(i, i + 500);
      await runSqlCount(
        tx,
        `update "end_users" set "registration_state" = ? where "id" in (${some.map(() => '?').join(', ')})`,
        ['registered', ...some],
        writes,
      );
    }
  });
}
