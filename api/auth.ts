import { timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import {
  authGeneration,
  findApiKeyWithAccount,
  getAccount,
  sha256Hex,
  touchApiKey,
  type AccountRow,
  type Db,
} from '../store/index.js';
import { ApiError, UnauthorizedError } from './errors.js';

export interface AuthState {
  /**
   * The key's account as of authentication. Its id and status are current; other fields (balance, webhooks) may
   * be up to CACHE_MS old: routes that show or use them read the row with `freshAccount(ctx)`.
   */
  account: AccountRow;
  apiKeyId: string;
  /** True when `account` was read from the store by this request. */
  fresh: boolean;
}

/** last_used_at is written at most this often per key, so a busy key does not turn every read into a write. */
const TOUCH_INTERVAL_MS = 60_000;

/**
 * Who a key belongs to is remembered this long. A revocation or suspension made through this process (API, portal,
 * tests) takes effect at once (store authGeneration); one made by another process (the `simu` CLI) within this.
 */
export const CACHE_MS = 1000;
const CACHE_MAX = 10_000;

/**
 * Bearer API-key authentication (spec, Authentication 1-3). The presented key is hashed and looked up by its
 * hash (with its account, in one query); the stored digest is then compared with the presented one in constant
 * time. Missing, unknown or revoked keys and keys of a suspended account are all a 401.
 */
export function apiKeyAuth(db: Db, readDb: Db = db) {
  const touched = new Map<string, number>();
  const known = new Map<string, { state: AuthState; generation: number; at: number }>();
  return async (ctx: Context, next: Next): Promise<void> => {
    const m = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(ctx.get('authorization'));
    if (!m) throw new UnauthorizedError();
    const presented = sha256Hex(m[1]);
    const now = Date.now();
    const hit = known.get(presented);
    if (hit && hit.generation === authGeneration() && now - hit.at < CACHE_MS) {
      ctx.state.auth = { ...hit.state, fresh: false } satisfies AuthState;
      return next();
    }
    known.delete(presented);
    const generation = authGeneration();
    const row = await findApiKeyWithAccount(readDb, presented);
    if (!row || !timingSafeEqual(Buffer.from(row.keyHash, 'hex'), Buffer.from(presented, 'hex')) || !row.active)
      throw new UnauthorizedError('The API key is missing, unknown or revoked.');
    const { apiKeyId: api_key_id, account } = row;
    if (account.status !== 'active')
      throw new ApiError(401, 'AUTH_ACCOUNT_SUSPENDED', 'The account is suspended; its API keys are rejected.', {
        'WWW-Authenticate': 'Bearer',
      });
    if ((touched.get(api_key_id) ?? 0) + TOUCH_INTERVAL_MS <= now) {
      touched.set(api_key_id, now);
      await touchApiKey(db, api_key_id);
    }
    const state: AuthState = {
      account,
      apiKeyId: api_key_id,
      fresh: true,
    };
    // Only keys that authenticated are remembered (an unknown key is looked up every time), under a bound.
    if (known.size >= CACHE_MAX) known.delete(known.keys().next().value!);
    known.set(presented, { state, generation, at: now });
    ctx.state.auth = state;
    await next();
  };
}

export const authOf = (ctx: Context): AuthState => ctx.state.auth as AuthState;

/** The key's account read now (balance, webhooks, limits): the row authentication read, or a new read. */
export async function freshAccount(ctx: Context, db: Db): Promise<AccountRow> {
  const auth = authOf(ctx);
  return auth.fresh ? auth.account : getAccount(db, auth.account.id);
}
