import { mintStreamToken, type Db } from '../store/index.js';

/** Lifetime of a staff stream token: long enough to open the socket (spec: Authentication 5). */
export const STAFF_STREAM_TOKEN_TTL_SECONDS = 60;

/**
 * A single-use token for the staff stream (every account's frames and PLATFORM.0001), for the operator CLI. It is
 * spent by the same `consumeStreamToken` as account tokens, minted by the store with no account and `staff` set.
 */
export async function mintStaffStreamToken(
  db: Db,
  ttlSeconds = STAFF_STREAM_TOKEN_TTL_SECONDS,
): Promise<{ token: string; ttl_seconds: number }> {
  const token = await mintStreamToken(db, null, ttlSeconds, true);
  return { token, ttl_seconds: ttlSeconds };
}
