import type { Db } from './db.js';
import { nowIso } from './ids.js';
import { deleteInBatches, firstRow, insertRows, runSqlCount } from './fixed-sql.js';
import { isUniqueViolation } from './errors.js';

/** Spec, Limits: a key is remembered for 24 hours from first use. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;
/**
 * A key left `in_flight` by a process that died mid-request would answer 409 for a day. After this long an
 * in-flight claim is considered abandoned and may be taken over (requests finish in well under a second).
 */
export const IDEMPOTENCY_ABANDONED_MS = 5 * 60 * 1000;

export type IdempotencyClaim =
  { kind: 'claimed' } | { kind: 'in_flight' } | { kind: 'mismatch' } | { kind: 'replay'; status: number; body: string };

/**
 * Claims (account, key) for one request. The primary key makes the claim atomic: of concurrent requests with the
 * same key exactly one inserts; the others read its state.
 */
export async function claimIdempotencyKey(
  db: Db,
  accountId: string,
  key: string,
  scope: string,
  requestHash: string,
  now: Date = new Date(),
): Promise<IdempotencyClaim> {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await insertRows(db, 'idempotency_keys', [
        {
          account_id: accountId,
          key,
          scope,
          request_hash: requestHash,
          state: 'in_flight',
          status_code: null,
          response_body: null,
          created_at: nowIso(now),
          expires_at: new Date(now.getTime() + IDEMPOTENCY_WINDOW_MS).toISOString(),
        },
      ]);
      return { kind: 'claimed' };
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
    }
    const row = (await firstRow(db, 'select * from "idempotency_keys" where "account_id" = ? and "key" = ? limit 1', [
      accountId,
      key,
    ])) as any;
    if (!row) continue; // freed between our insert and read: try again
    const abandoned =
      row.state === 'in_flight' && Date.parse(row.created_at) + IDEMPOTENCY_ABANDONED_MS <= now.getTime();
    if (row.expires_at <= nowIso(now) || abandoned) {
      await runSqlCount(
        db,
        'delete from "idempotency_keys" where "account_id" = ? and "key" = ? and "created_at" = ?',
        [accountId, key, row.created_at],
        'idempotency_keys',
      );
      continue;
    }
    if (row.scope !== scope || row.request_hash !== requestHash) return { kind: 'mismatch' };
    if (row.state === 'in_flight') return { kind: 'in_flight' };
    return { kind: 'replay', status: Number(row.status_code), body: String(row.response_body ?? '') };
  }
  return { kind: 'in_flight' };
}

/** Stores the response of a finished request so retries replay it verbatim. */
export async function completeIdempotencyKey(
  db: Db,
  accountId: string,
  key: string,
  status: number,
  body: string,
): Promise<void> {
  await runSqlCount(
    db,
    'update "idempotency_keys" set "state" = ?, "status_code" = ?, "response_body" = ? ' +
      'where "account_id" = ? and "key" = ? and "state" = ?',
    ['done', status, body, accountId, key, 'in_flight'],
    { table: 'idempotency_keys', columns: ['state', 'status_code', 'response_body'] },
  );
}

/** Frees a claim (the request was refused with 402/429/validation, or failed): a corrected retry may run. */
export async function releaseIdempotencyKey(db: Db, accountId: string, key: string): Promise<void> {
  await runSqlCount(
    db,
    'delete from "idempotency_keys" where "account_id" = ? and "key" = ? and "state" = ?',
    [accountId, key, 'in_flight'],
    'idempotency_keys',
  );
}

/** Removes keys past their window (housekeeping). */
export async function purgeIdempotencyKeys(db: Db, now: Date = new Date(), signal?: AbortSignal): Promise<number> {
  return deleteInBatches(db, 'idempotency_keys', ['account_id', 'key'], '"expires_at" <= ?', [nowIso(now)], signal);
}
