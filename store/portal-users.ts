import type { Db } from './db.js';
import { firstRow, insertRows, runSqlCount } from './fixed-sql.js';

/** A portal (web) user: email + scrypt password + TOTP, bound to one account (api/portal-users.ts owns the rules). */
export interface PortalUserRow {
  id: string;
  account_id: string;
  email: string;
  password_hash: string;
  totp_secret: string;
  totp_enrolled: boolean;
  totp_last_step: number;
  created_at: string;
}

const normalise = (row: any): PortalUserRow => ({
  ...row,
  totp_enrolled: Boolean(row.totp_enrolled),
  totp_last_step: Number(row.totp_last_step),
});

export async function insertPortalUser(db: Db, row: PortalUserRow): Promise<void> {
  await insertRows(db, 'portal_users', [{ ...row }]);
}

/** By email as stored (the caller lower-cases and trims). */
export async function findPortalUserRowByEmail(db: Db, email: string): Promise<PortalUserRow | undefined> {
  const row = await firstRow(db, 'select * from "portal_users" where "email" = ? limit 1', [email]);
  return row ? normalise(row) : undefined;
}

export async function findPortalUserRow(db: Db, id: string): Promise<PortalUserRow | undefined> {
  const row = await firstRow(db, 'select * from "portal_users" where "id" = ? limit 1', [id]);
  return row ? normalise(row) : undefined;
}

/**
 * Records an accepted one-time-code step and marks the user enrolled, only if the step is later than the last
 * accepted one: one conditional update, so two concurrent requests with the same step cannot both win.
 */
export async function advanceTotpStep(db: Db, userId: string, step: number): Promise<boolean> {
  const n = await runSqlCount(
    db,
    'update "portal_users" set "totp_last_step" = ?, "totp_enrolled" = ? where "id" = ? and "totp_last_step" < ?',
    [step, true, userId, step],
    { table: 'portal_users', columns: ['totp_last_step', 'totp_enrolled'] },
  );
  return n === 1;
}
