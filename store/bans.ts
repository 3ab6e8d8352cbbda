import type { Db } from './db.js';
import { runSqlCount, selectRows, upsertRow } from './fixed-sql.js';

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
  await upsertRow(db, 'ip_bans', row, ['address']);
  return row;
}

export interface ListBansOptions {
  /** Also show bans whose period has ended (kept until purged). */
  includeExpired?: boolean;
  now?: Date;
}

/** Bans in force (or all kept rows), the newest first. */
export async function listBans(db: Db, opts: ListBansOptions = {}): Promise<BanRow[]> {
  const order = ' order by "banned_at" desc, "address" asc';
  const rows = opts.includeExpired
    ? await selectRows(db, `select * from "ip_bans"${order}`, [])
    : await selectRows(db, `select * from "ip_bans" where "expires_at" > ?${order}`, [
        (opts.now ?? new Date()).toISOString(),
      ]);
  return rows.map(normalise);
}

/** Lifts a ban (deletes its row). True when there was one. The switch drops it from memory at its next poll. */
export async function liftBan(db: Db, address: string): Promise<boolean> {
  return (await runSqlCount(db, 'delete from "ip_bans" where "address" = ?', [address], 'ip_bans')) > 0;
}

/** Records the switch's running count of dropped requests for a ban. */
export async function setBanHits(db: Db, address: string, hits: number): Promise<void> {
  await runSqlCount(db, 'update "ip_bans" set "hits" = ? where "address" = ?', [hits, address], {
    table: 'ip_bans',
    columns: ['hits'],
  });
}

/** Deletes rows whose ban ended before `before`; returns how many went. */
export async function purgeExpiredBans(db: Db, before: Date): Promise<number> {
  return runSqlCount(db, 'delete from "ip_bans" where "expires_at" <= ?', [before.toISOString()], 'ip_bans');
}
