import type { Db } from './db.js';

/**
 * Bans of SIP source addresses, written by the running switch (sip/security) and read or lifted by the operator's
 * CLI (`simu bans list`, `simu bans lift ADDRESS`). The switch keeps its own in-memory copy and re-reads this table
 * every few seconds, so a lift here takes effect without a restart.
 */
export interface BanRow {
  address: string;
  /** flood | auth-failures | scanner | operator */
  reason: string;
  banned_at: string;
  expires_at: string;
  /** Requests dropped while the ban held (flushed by the switch every few seconds). */
  hits: number;
}

export interface NewBan {
  address: string;
  reason: string;
  bannedAt: Date;
  expiresAt: Date;
  hits?: number;
}

const normalise = (r: any): BanRow => ({
  address: r.address,
  reason: r.reason,
  banned_at: r.banned_at,
  expires_at: r.expires_at,
  hits: Number(r.hits),
});

/** Adds a ban, replacing any earlier row for the same address (a re-ban starts a fresh period and hit count). */
export async function addBan(db: Db, ban: NewBan): Promise<BanRow> {
  const row = {
    address: ban.address,
    reason: ban.reason,
    banned_at: ban.bannedAt.toISOString(),
    expires_at: ban.expiresAt.toISOString(),
    hits: ban.hits ?? 0,
  };
  await db('ip_bans').insert(row).onConflict('address').merge();
  return row;
}

export interface ListBansOptions {
  /** Also show bans whose period has ended (kept until purged). */
  includeExpired?: boolean;
  now?: Date;
}

/** Bans in force (or all kept rows), the newest first. */
export async function listBans(db: Db, opts: ListBansOptions = {}): Promise<BanRow[]> {
  const q = db('ip_bans').orderBy('banned_at', 'desc').orderBy('address');
  if (!opts.includeExpired) q.where('expires_at', '>', (opts.now ?? new Date()).toISOString());
  return (await q).map(normalise);
}

/** Lifts a ban (deletes its row). True when there was one. The switch drops it from memory at its next poll. */
export async function liftBan(db: Db, address: string): Promise<boolean> {
  return (await db('ip_bans').where({ address }).delete()) > 0;
}

/** Records the switch's running count of dropped requests for a ban. */
export async function setBanHits(db: Db, address: string, hits: number): Promise<void> {
  await db('ip_bans').where({ address }).update({ hits });
}

/** Deletes rows whose ban ended before `before`; returns how many went. */
export async function purgeExpiredBans(db: Db, before: Date): Promise<number> {
  return db('ip_bans').where('expires_at', '<=', before.toISOString()).delete();
}
