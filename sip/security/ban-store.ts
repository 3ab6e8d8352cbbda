import { bansTable as table, type Db } from '../../store/index.js';
import { checkedAddress } from './address.js';
import type { BanReason, BanRecord, BanStore } from './ban-list.js';
import { SecuritySettingError } from './errors.js';

const toRecord = (r: table.BanRow): BanRecord => ({
  address: r.address,
  reason: r.reason,
  bannedAt: Date.parse(r.banned_at),
  expiresAt: Date.parse(r.expires_at),
  hits: r.hits,
});

/** The ban store on the project's database (table `ip_bans`, store/bans.ts). */
export function knexBanStore(db: Db): BanStore {
  return {
    add: async (b) => {
      await table.addBan(db, {
        address: b.address,
        reason: b.reason,
        bannedAt: new Date(b.bannedAt),
        expiresAt: new Date(b.expiresAt),
        hits: b.hits,
      });
    },
    active: async (now) => (await table.listBans(db, { now: new Date(now) })).map(toRecord),
    setHits: (address, hits) => table.setBanHits(db, address, hits),
    purgeBefore: (before) => table.purgeExpiredBans(db, new Date(before)),
  };
}

/*
 * The operator's side, for `simu bans list` and `simu bans lift ADDRESS` (cli/). They work on the table while the
 * switch runs; the switch re-reads it every `pollSeconds` (3 s by default), so a lift takes effect within that.
 */

/** Bans in force (or, with includeExpired, every kept row), newest first. */
export function listBans(db: Db, opts: { includeExpired?: boolean; now?: Date } = {}): Promise<table.BanRow[]> {
  return table.listBans(db, opts);
}

/** Lifts the ban on an address; false when there was none. Throws BadAddressError for a non-IP. */
export async function liftBan(db: Db, address: string): Promise<boolean> {
  return table.liftBan(db, checkedAddress(address));
}

/** Bans an address by hand (reason `operator` unless given); the switch takes it in at its next poll. */
export async function addBan(
  db: Db,
  ban: { address: string; seconds: number; reason?: BanReason; now?: Date },
): Promise<table.BanRow> {
  if (!Number.isFinite(ban.seconds) || ban.seconds <= 0) {
    throw new SecuritySettingError(`a ban needs a positive number of seconds, got ${ban.seconds}`);
  }
  const now = ban.now ?? new Date();
  return table.addBan(db, {
    address: checkedAddress(ban.address),
    reason: ban.reason ?? 'operator',
    bannedAt: now,
    expiresAt: new Date(now.getTime() + ban.seconds * 1000),
  });
}

export type BanRow = table.BanRow;
