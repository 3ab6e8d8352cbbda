import { isPostgres, type Db, type Tx } from './db.js';
import { insertRows, selectRows, updateRow, updateRowCount } from './fixed-sql.js';
import { newId, nowIso, randomToken } from './ids.js';
import { NotFoundError } from './errors.js';
import { cachedRead } from './read-cache.js';
import { freeSipLabel, sipLabelOf } from './sip-domains.js';

export interface AccountRow {
  id: string;
  name: string;
  status: 'active' | 'suspended';
  balance_cents: number;
  max_concurrent_calls: number;
  max_cps: number;
  max_call_seconds: number;
  signing_secret: string;
  webhook_voice_inbound: string;
  webhook_voice_outbound: string;
  webhook_status: string;
  fallback_mode: 'message' | 'play' | 'drop';
  fallback_value: string;
  recording_retention_days: number | null;
  created_at: string;
  /** ISO 3166-1 alpha-2 country of the national numbers the account's phones dial; null: the platform default. */
  country: string | null;
  /** Migration 023: the language of the switch's own notices to the account's callers (`en`, `sw`). */
  language: string;
  /** Seconds before a prepaid call is cut that its paying leg hears the warning; 0: never. */
  credit_warning_seconds: number;
  /** Opt-in to the last known good call-control document when a number's webhook fails (0/1 on SQLite). */
  last_good_document: boolean | number;
  /** The account's SIP domain label under `sip.domain` (store/sip-domains.ts); null before migration 019. */
  sip_label: string | null;
}

export const newSigningSecret = (): string => `whsec_${randomToken(24)}`;

/**
 * Bumped by every write through this module and by API-key writes (store/api-keys.ts): a reader that caches who
 * a key belongs to (api/auth.ts) knows its entries went stale in this process. Writers in other processes (the
 * CLI) are bounded by the cache's own time limit.
 */
let authWrites = 0;
const authListeners = new Set<() => void>();
export const authGeneration = (): number => authWrites;
export const noteAuthWrite = (): void => {
  authWrites += 1;
  for (const l of authListeners) {
    try {
      l();
    } catch {
      /* a listener's failure is its own */
    }
  }
};
/** Called after every auth write in this process (the event stream re-checks its sockets); returns an unsubscribe. */
export const onAuthWrite = (listener: () => void): (() => void) => {
  authListeners.add(listener);
  return () => void authListeners.delete(listener);
};

function normalise(row: any): AccountRow {
  return { ...row, balance_cents: Number(row.balance_cents) };
}

export async function insertAccount(db: Db | Tx, name: string): Promise<AccountRow> {
  const row = {
    id: newId(),
    name,
    status: 'active',
    balance_cents: 0,
    signing_secret: newSigningSecret(),
    created_at: nowIso(),
    sip_label: await freeSipLabel(db, sipLabelOf(name)),
  };
  await insertRows(db, 'accounts', [row]);
  noteAuthWrite();
  return getAccount(db, row.id);
}

export async function findAccount(db: Db | Tx, id: string): Promise<AccountRow | undefined> {
  const [row] = await selectRows(db, 'select * from "accounts" where "id" = ? limit 1', [id]);
  return row ? normalise(row) : undefined;
}

/** An account's fields other than its balance: what a call reads for its URLs, secret, caps and status. */
export type AccountSettings = Omit<AccountRow, 'balance_cents'>;

/**
 * The account without its balance, from a per-process cache invalidated by every write to accounts through this
 * store (store/read-cache.ts); in the switch, by other processes' writes too (within 50 ms on SQLite, at their
 * commit on PostgreSQL). For the call path's reads of webhook URLs, signing secret, fallback, caps and status.
 * `db` is the store's root instance, not a transaction.
 */
export async function findAccountSettings(db: Db, id: string): Promise<AccountSettings | undefined> {
  return cachedRead(db, 'accounts', id, async () => {
    const row = await findAccount(db, id);
    if (!row) return undefined;
    const { balance_cents: _balance, ...settings } = row;
    return Object.freeze(settings);
  });
}

/** findAccountSettings, or ACCOUNT_NOT_FOUND. */
export async function getAccountSettings(db: Db, id: string): Promise<AccountSettings> {
  const row = await findAccountSettings(db, id);
  if (!row) throw new NotFoundError('account', 'ACCOUNT_NOT_FOUND');
  return row;
}

export async function getAccount(db: Db | Tx, id: string): Promise<AccountRow> {
  const row = await findAccount(db, id);
  if (!row) throw new NotFoundError('account', 'ACCOUNT_NOT_FOUND');
  return row;
}

/**
 * Reads the balance and locks the account row for the rest of the transaction (FOR NO KEY UPDATE on PostgreSQL;
 * SQLite has one writer), so concurrent ledger posts serialise. Not FOR UPDATE: that lock also conflicts with the
 * KEY SHARE lock every foreign-key check takes on the account row, so while one settlement is open every insert of
 * the account's calls, events and credit rows would wait for it. The balance update that follows takes the same NO KEY
 * UPDATE lock. Undefined when there is no such account.
 */
export async function lockAccountBalance(tx: Tx, id: string): Promise<number | undefined> {
  const sql = 'select "balance_cents" from "accounts" where "id" = ?' + (isPostgres(tx) ? ' for no key update' : '');
  const [row] = await selectRows(tx, sql, [id]);
  return row ? Number(row.balance_cents) : undefined;
}

/** Sets the balance; only the ledger (billing/ledger) moves it, in the transaction that writes its row. */
export async function setAccountBalance(tx: Tx, id: string, balanceCents: number): Promise<void> {
  await updateRow(tx, 'accounts', { column: 'id', value: id }, { balance_cents: balanceCents });
}

/**
 * What the credit monitor needs of an account at answer: its balance and its per-call length cap; with `others`,
 * in the same statement, what the account's live calls on other nodes have committed (their call_credit rows with
 * a heartbeat at or after `since`), so a node sharing the store reads both in one round trip.
 */
export async function accountFunds(
  db: Db | Tx,
  id: string,
  others?: { nodeId: string; since: string },
): Promise<
  | {
      balance_cents: number;
      max_call_seconds: number;
      credit_warning_seconds: number;
      language: string;
      /** Committed by the account's live calls on other nodes (0 unless `others` was given). */
      others_cents: number;
    }
  | undefined
> {
  // With the balance, what the live monitor needs at answer: the lead time and language of the "one minute left"
  // notice.
  const [row] = others
    ? await selectRows(db, FUNDS_WITH_OTHERS, [others.nodeId, others.since, id])
    : await selectRows(db, FUNDS, [id]);
  return row
    ? {
        balance_cents: Number(row.balance_cents),
        max_call_seconds: Number(row.max_call_seconds),
        credit_warning_seconds: Number(row.credit_warning_seconds),
        language: String(row.language),
        others_cents: Number(row.others_cents ?? 0),
      }
    : undefined;
}

const FUNDS =
  'select "balance_cents", "max_call_seconds", "credit_warning_seconds", "language" from "accounts" where "id" = ?';
const FUNDS_WITH_OTHERS =
  'select "balance_cents", "max_call_seconds", "credit_warning_seconds", "language", ' +
  '(select coalesce(sum("committed_cents"), 0) from "call_credit" where "account_id" = "accounts"."id" ' +
  'and not "node_id" = ? and "heartbeat_at" >= ?) as "others_cents" from "accounts" where "id" = ?';

/** The account's balance alone (the credit monitor's refresh); undefined when there is no such account. */
export async function accountBalance(db: Db | Tx, id: string): Promise<number | undefined> {
  const [row] = await selectRows(db, 'select "balance_cents" from "accounts" where "id" = ?', [id]);
  return row ? Number(row.balance_cents) : undefined;
}

export async function listAccounts(db: Db | Tx): Promise<AccountRow[]> {
  return (await selectRows(db, 'select * from "accounts" order by "created_at" asc', [])).map(normalise);
}

export async function updateAccount(
  db: Db | Tx,
  id: string,
  patch: Partial<Omit<AccountRow, 'id' | 'created_at'>>,
): Promise<AccountRow> {
  const n = await updateRowCount(db, 'accounts', { column: 'id', value: id }, patch);
  noteAuthWrite();
  if (n === 0) throw new NotFoundError('account', 'ACCOUNT_NOT_FOUND');
  return getAccount(db, id);
}
