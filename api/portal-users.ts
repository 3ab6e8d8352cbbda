import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import {
  advanceTotpStep,
  findPortalUserRow,
  findPortalUserRowByEmail,
  insertPortalUser,
  newId,
  nowIso,
  type Db,
  type PortalUserRow,
} from '../store/index.js';
import { newTotpSecret, spendTotpCode } from './totp.js';

export type { PortalUserRow } from '../store/index.js';

export class PortalUserError extends Error {
  constructor(
    readonly code: 'PORTAL_USER_EXISTS' | 'PORTAL_PASSWORD_WEAK' | 'PORTAL_EMAIL_INVALID',
    message: string,
  ) {
    super(message);
  }
}

// scrypt cost: N = 2^15, r = 8, p = 1 (about 32 MiB and tens of ms: the interactive-login figures of RFC 7914
// section 2 scaled to today's hardware). Stored with the hash so it can be raised later.
const N = 32768;
const R = 8;
const P = 1;
const KEYLEN = 32;

function scrypt(password: string, salt: Buffer, keylen: number, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCb(password, salt, keylen, opts, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEYLEN, { N, r: R, p: P, maxmem: 64 * 1024 * 1024 });
  return `scrypt$${N}$${R}$${P}$${salt.toString('hex')}$${key.toString('hex')}`;
}

export async function checkPassword(password: string, stored: string): Promise<boolean> {
  const [tag, n, r, p, saltHex, keyHex] = stored.split('$');
  if (tag !== 'scrypt' || !saltHex || !keyHex) return false;
  const want = Buffer.from(keyHex, 'hex');
  const got = await scrypt(password, Buffer.from(saltHex, 'hex'), want.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: 64 * 1024 * 1024,
  });
  return timingSafeEqual(want, got);
}

/** A hash of a random password, checked when the email is unknown so both paths cost the same scrypt. */
let dummyHash: Promise<string> | undefined;
export const dummyPasswordHash = (): Promise<string> => (dummyHash ??= hashPassword(randomBytes(16).toString('hex')));

export async function addPortalUser(
  db: Db,
  accountId: string,
  email: string,
  password: string,
): Promise<PortalUserRow> {
  const e = email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(e)) throw new PortalUserError('PORTAL_EMAIL_INVALID', 'not an email address');
  if (password.length < 10) throw new PortalUserError('PORTAL_PASSWORD_WEAK', 'the password needs 10 characters');
  if (await findPortalUserRowByEmail(db, e))
    throw new PortalUserError('PORTAL_USER_EXISTS', `a portal user with email ${e} exists`);
  const row = {
    id: newId(),
    account_id: accountId,
    email: e,
    password_hash: await hashPassword(password),
    totp_secret: newTotpSecret(),
    totp_enrolled: false,
    totp_last_step: 0,
    created_at: nowIso(),
  };
  await insertPortalUser(db, row);
  return row;
}

export async function findPortalUserByEmail(db: Db, email: string): Promise<PortalUserRow | undefined> {
  return findPortalUserRowByEmail(db, email.trim().toLowerCase());
}

export async function getPortalUser(db: Db, id: string): Promise<PortalUserRow | undefined> {
  return findPortalUserRow(db, id);
}

/** Verifies a portal user's one-time code and spends it (spendTotpCode); the first accepted marks it enrolled. */
export async function spendTotp(db: Db, userId: string, code: string, nowMs = Date.now()): Promise<boolean> {
  return spendTotpCode(await getPortalUser(db, userId), code, nowMs, (step) => advanceTotpStep(db, userId, step));
}
