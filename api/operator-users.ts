import {
  advanceOperatorTotpStep,
  findOperator,
  findOperatorByEmail,
  insertOperator,
  newId,
  nowIso,
  type Db,
  type OperatorRow,
} from '../store/index.js';
import { hashPassword, PortalUserError } from './portal-users.js';
import { newTotpSecret, spendTotpCode } from './totp.js';

/**
 * Operators of the platform: the people who sign in to /console/. The same rules as portal users
 * (scrypt password of 10 characters or more, RFC 6238 code spent once), in their own table: an account's portal
 * credentials never open the console.
 */
export async function addOperator(db: Db, email: string, password: string): Promise<OperatorRow> {
  const e = email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(e) || e.length > 320)
    throw new PortalUserError('PORTAL_EMAIL_INVALID', 'not an email address');
  if (password.length < 10) throw new PortalUserError('PORTAL_PASSWORD_WEAK', 'the password needs 10 characters');
  if (await findOperatorByEmail(db, e)) throw new PortalUserError('PORTAL_USER_EXISTS', `an operator ${e} exists`);
  const row: OperatorRow = {
    id: newId(),
    email: e,
    password_hash: await hashPassword(password),
    totp_secret: newTotpSecret(),
    totp_last_step: 0,
    created_at: nowIso(),
  };
  await insertOperator(db, row);
  return row;
}

export const findOperatorByEmailAddress = (db: Db, email: string) =>
  findOperatorByEmail(db, email.trim().toLowerCase());

/** Verifies an operator's one-time code and spends it (a later step than the last accepted one). */
export async function spendOperatorTotp(db: Db, id: string, code: string, nowMs = Date.now()): Promise<boolean> {
  return spendTotpCode(await findOperator(db, id), code, nowMs, (step) => advanceOperatorTotpStep(db, id, step));
}
