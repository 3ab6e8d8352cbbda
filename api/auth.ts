import { timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import { sha256Hex, touchApiKey, type AccountRow, type Db } from '../store/index.js';
import { ApiError, UnauthorizedError } from './errors.js';

export interface AuthState {
  account: AccountRow;
  apiKeyId: string;
}

/** last_used_at is written at most this often per key, so a busy key does not turn every read into a write. */
const TOUCH_INTERVAL_MS = 60_000;

/**
 * Bearer API-key authentication (spec, Authentication 1-3). The presented key is hashed and looked up by its
 * hash (with its account, in one query); the stored digest is then compared with the presented one in constant
 * time. Missing, unknown or revoked keys and keys of a suspended account are all a 401.
 */
export function apiKeyAuth(db: Db, readDb: Db = db) {
  const touched = new Map<string, number>();
  return async (ctx: Context, next: Next): Promise<void> => {
    const m = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(ctx.get('authorization'));
    if (!m) throw new UnauthorizedError();
    const presented = sha256Hex(m[1]);
    const row = await readDb('api_keys')
      .join('accounts', 'accounts.id', 'api_keys.account_id')
      .where('api_keys.key_hash', presented)
      .first(
        'api_keys.id as api_key_id',
        'api_keys.key_hash as api_key_hash',
        'api_keys.is_active as api_key_active',
        'accounts.*',
      );
    if (
      !row ||
      !timingSafeEqual(Buffer.from(row.api_key_hash, 'hex'), Buffer.from(presented, 'hex')) ||
      !row.api_key_active
    )
      throw new UnauthorizedError('The API key is missing, unknown or revoked.');
    const { api_key_id, api_key_hash: _h, api_key_active: _a, ...account } = row;
    if (account.status !== 'active')
      throw new ApiError(401, 'AUTH_ACCOUNT_SUSPENDED', 'The account is suspended; its API keys are rejected.', {
        'WWW-Authenticate': 'Bearer',
      });
    const now = Date.now();
    if ((touched.get(api_key_id) ?? 0) + TOUCH_INTERVAL_MS <= now) {
      touched.set(api_key_id, now);
      await touchApiKey(db, api_key_id);
    }
    ctx.state.auth = {
      account: { ...account, balance_cents: Number(account.balance_cents) } as AccountRow,
      apiKeyId: api_key_id,
    } satisfies AuthState;
    await next();
  };
}

export const authOf = (ctx: Context): AuthState => ctx.state.auth as AuthState;
