import { isPostgres, sqlOf, type Db, type Tx } from './db.js';
import { storeNodeId } from './node-identity.js';
import { newId, nowIso, newCallSid } from './ids.js';
import { insertRows, selectRows, updateRow, updateRowCount } from './fixed-sql.js';
import { compiled } from './knex.js';
import { CALLS_SEARCH_CANDIDATES } from './calls-search.js';

export type CallDirection = 'inbound' | 'outbound' | 'internal';
export type CallStatus = 'initiated' | 'ringing' | 'answered' | 'completed' | 'failed';
export const CALL_DIRECTIONS: readonly CallDirection[] = ['inbound', 'outbound', 'internal'];
export const CALL_STATUSES: readonly CallStatus[] = ['initiated', 'ringing', 'answered', 'completed', 'failed'];
/** Statuses of a call that has not ended: they count towards the concurrency cap and can be hung up. */
export const LIVE_CALL_STATUSES: readonly CallStatus[] = ['initiated', 'ringing', 'answered'];

export interface CallRow {
  id: string;
  sid: string;
  account_id: string;
  direction: CallDirection;
  from_number: string;
  to_number: string;
  status: CallStatus;
  reason_code: string | null;
  reason_label: string | null;
  duration_seconds: number | null;
  talk_seconds: number | null;
  cost_cents: number;
  tts_seconds: number;
  custom_payload: string | null;
  webhook_url: string | null;
  number_id: string | null;
  end_user_id: string | null;
  parent_call_id: string | null;
  /** The parent's sid, copied when the leg is written (migration 031; absent on rows read before it ran). */
  parent_call_sid?: string | null;
  node_id: string | null;
  started_at: string | null;
  answered_at: string | null;
  ended_at: string | null;
  created_at: string;
  /** An emergency call (112, 999, 911 or a configured number): admitted whatever the account's state. */
  emergency: boolean;
  /** `last_good`: the call ran its number's last known good document (null before migration 023). */
  served_from?: string | null;
  /** Answering machine detection's verdict and how long it took, ms (null without detection; migration 032). */
  answered_by?: string | null;
  machine_detection_ms?: number | null;
}

export const normaliseCall = (r: any): CallRow => ({
  ...r,
  emergency: Boolean(r.emergency),
  cost_cents: Number(r.cost_cents),
  tts_seconds: Number(r.tts_seconds),
  duration_seconds: r.duration_seconds == null ? null : Number(r.duration_seconds),
  talk_seconds: r.talk_seconds == null ? null : Number(r.talk_seconds),
  ...(r.machine_detection_ms == null ? {} : { machine_detection_ms: Number(r.machine_detection_ms) }),
});

/**
 * A per-account counter bumped by every write through this module, so a reader may cache derived figures (the
 * list total) and know when they went stale in this process. Writers in other processes are bounded by the
 * cache's own time limit.
 */
const generations = new Map<string, number>();
export const callsGeneration = (accountId: string): number => generations.get(accountId) ?? 0;
const bump = (accountId: string): void => {
  generations.set(accountId, callsGeneration(accountId) + 1);
};
/** For writers of `calls` outside this module (billing/reconcile.ts): call after the write committed. */
export const noteCallsWritten = bump;

export interface NewCall {
  account_id: string;
  direction: CallDirection;
  from_number: string;
  to_number: string;
  status?: CallStatus;
  reason_code?: string | null;
  reason_label?: string | null;
  custom_payload?: unknown;
  webhook_url?: string | null;
  number_id?: string | null;
  end_user_id?: string | null;
  parent_call_id?: string | null;
  parent_call_sid?: string | null;
  node_id?: string | null;
  started_at?: string | null;
  ended_at?: string | null;
  created_at?: string;
  emergency?: boolean;
}

export async function insertCall(db: Db | Tx, input: NewCall): Promise<CallRow> {
  const row = {
    id: newId(),
    sid: newCallSid(),
    account_id: input.account_id,
    direction: input.direction,
    from_number: input.from_number,
    to_number: input.to_number,
    status: input.status ?? 'initiated',
    reason_code: input.reason_code ?? null,
    reason_label: input.reason_label ?? null,
    duration_seconds: null,
    talk_seconds: null,
    cost_cents: 0,
    tts_seconds: 0,
    custom_payload: input.custom_payload == null ? null : JSON.stringify(input.custom_payload),
    webhook_url: input.webhook_url ?? null,
    number_id: input.number_id ?? null,
    end_user_id: input.end_user_id ?? null,
    parent_call_id: input.parent_call_id ?? null,
    // Written only on a child leg (null by default), so a store migrated before 031 (the tests of earlier
    // migrations) still takes every other call; the row answered has it all the same.
    ...(input.parent_call_sid ? { parent_call_sid: input.parent_call_sid } : {}),
    node_id: input.node_id ?? storeNodeId(),
    started_at: input.started_at ?? null,
    answered_at: null,
    ended_at: input.ended_at ?? null,
    created_at: input.created_at ?? nowIso(),
    emergency: input.emergency ?? false,
    // Every column, so the row answered is the row stored (the lifecycle keeps it and applies its writes to it).
    served_from: null,
  };
  await insertRows(db, 'calls', [row]);
  bump(row.account_id);
  return normaliseCall({ parent_call_sid: null, answered_by: null, machine_detection_ms: null, ...row });
}

export async function findCall(db: Db | Tx, accountId: string, id: string): Promise<CallRow | undefined> {
  const [r] = await selectRows(db, 'select * from "calls" where "account_id" = ? and "id" = ? limit 1', [
    accountId,
    id,
  ]);
  return r ? normaliseCall(r) : undefined;
}

export async function findCallBySid(db: Db | Tx, accountId: string, sid: string): Promise<CallRow | undefined> {
  const [r] = await selectRows(db, 'select * from "calls" where "account_id" = ? and "sid" = ? limit 1', [
    accountId,
    sid,
  ]);
  return r ? normaliseCall(r) : undefined;
}

/** Any account's call by id: for the call engine, never for a customer-facing read. */
export async function findCallAnyAccount(db: Db | Tx, id: string): Promise<CallRow | undefined> {
  const [r] = await selectRows(db, 'select * from "calls" where "id" = ? limit 1', [id]);
  return r ? normaliseCall(r) : undefined;
}

export type CallPatch = Partial<Omit<CallRow, 'id' | 'sid' | 'account_id' | 'created_at'>>;

/**
 * Updates a call; with `onlyIfStatusIn` the update is conditional (a compare-and-set on the status), so two
 * writers that both try to end a call cannot both win. Returns the row after the update, or undefined when the
 * condition did not hold.
 */
export async function updateCall(
  db: Db | Tx,
  id: string,
  patch: CallPatch,
  onlyIfStatusIn?: readonly CallStatus[],
): Promise<CallRow | undefined> {
  // One statement: the row after the update comes back with it (RETURNING: SQLite >= 3.35, PostgreSQL).
  const r = await updateRow(db, 'calls', { column: 'id', value: id }, patch, {
    guard: onlyIfStatusIn ? { column: 'status', in: onlyIfStatusIn } : undefined,
    returning: true,
  });
  if (!r) return undefined;
  bump(r.account_id as string);
  return normaliseCall(r);
}

/**
 * updateCall for the writer that holds the call's row (its lifecycle): the same UPDATE, conditional the same way,
 * without RETURNING; the row after it is the one held with the patch applied. Every column the switch writes while a
 * call lives is written through its lifecycle; the others that write a call's row only end it (a failed originate,
 * the reconcile sweep), and then the compare-and-set on the status fails here. Six of these a carrier call (three a
 * leg): RETURNING * cost SQLite about four times the update itself.
 */
export async function updateHeldCall(
  db: Db | Tx,
  row: CallRow,
  patch: CallPatch,
  onlyIfStatusIn?: readonly CallStatus[],
): Promise<CallRow | undefined> {
  const guard = onlyIfStatusIn ? { column: 'status', in: onlyIfStatusIn } : undefined;
  const changed = await updateRowCount(db, 'calls', { column: 'id', value: row.id }, patch, guard);
  if (changed === 0) return undefined;
  bump(row.account_id);
  // The held row is normalised already and a patch is typed: one copy with the patch over it, not two.
  const after: Record<string, unknown> = { ...row };
  for (const k in patch) {
    const v = patch[k as keyof CallPatch];
    if (v !== undefined) after[k] = v;
  }
  return after as unknown as CallRow;
}

/**
 * Closes a call only while it is still live (a compare-and-set on the status, for the reconcile sweep): true when
 * this update won. The caller notes the write (noteCallsWritten) after its transaction commits.
 */
export async function closeCallIfLive(db: Db | Tx, id: string, patch: CallPatch): Promise<boolean> {
  const guard = { column: 'status', in: LIVE_CALL_STATUSES };
  return (await updateRowCount(db, 'calls', { column: 'id', value: id }, patch, guard)) > 0;
}

/** Writes figures on a call row, unconditionally and without noting the write (the caller does, after commit). */
export async function patchCallRow(db: Db | Tx, id: string, patch: CallPatch): Promise<void> {
  await updateRowCount(db, 'calls', { column: 'id', value: id }, patch);
}

const LIVE_IN = `"status" in (${LIVE_CALL_STATUSES.map(() => '?').join(', ')})`;

/**
 * Ids of the calls the store shows live, created at or before `createdBefore`: of one node (and those written
 * before calls named their node), or all when null.
 */
export async function liveCallIds(db: Db | Tx, createdBefore: string, nodeId: string | null): Promise<string[]> {
  const rows =
    nodeId === null
      ? await selectRows(db, `select "id" from "calls" where ${LIVE_IN} and "created_at" <= ?`, [
          ...LIVE_CALL_STATUSES,
          createdBefore,
        ])
      : await selectRows(
          db,
          `select "id" from "calls" where ${LIVE_IN} and "created_at" <= ? and ("node_id" = ? or "node_id" is null)`,
          [...LIVE_CALL_STATUSES, createdBefore, nodeId],
        );
  return rows.map((r) => r.id as string);
}

/** Live calls of every account (the platform-wide figure of staff streams). */
export async function countAllLiveCalls(db: Db | Tx): Promise<number> {
  const [r] = await selectRows(db, `select count(*) as "n" from "calls" where ${LIVE_IN}`, LIVE_CALL_STATUSES);
  return Number(r?.n ?? 0);
}

const COUNT_LIVE_OF_ACCOUNT = `select count(*) as "n" from "calls" where "account_id" = ? and "status" in (${LIVE_CALL_STATUSES.map(() => '?').join(', ')})`;

export async function countLiveCalls(db: Db | Tx, accountId: string): Promise<number> {
  const [r] = await selectRows(db, COUNT_LIVE_OF_ACCOUNT, [accountId, ...LIVE_CALL_STATUSES]);
  return Number(r?.n ?? 0);
}

const BALANCE_AND_LIVE = `select "balance_cents", (${COUNT_LIVE_OF_ACCOUNT}) as "live" from "accounts" where "id" = ?`;

/**
 * What admission reads of the store for a new call, in one statement (one round trip on PostgreSQL): the account's
 * balance (never cached: money) and how many of its calls are live. Undefined when there is no such account.
 *
 * On SQLite the count is kept by triggers (migration 030). On PostgreSQL it walks the (account_id, status) index
 * range, linear in the account's live calls (docs/performance.md): a counter row there would serialise an account's
 * call writes behind whichever transaction last touched it.
 */
export async function balanceAndLiveCalls(
  db: Db | Tx,
  accountId: string,
): Promise<{ balanceCents: number; live: number } | undefined> {
  const [r] = isPostgres(db)
    ? await selectRows(db, BALANCE_AND_LIVE, [accountId, ...LIVE_CALL_STATUSES, accountId])
    : await selectRows(db, BALANCE_AND_LIVE_COUNTED, [accountId]);
  return r ? { balanceCents: Number(r.balance_cents), live: Number(r.live) } : undefined;
}

/** On SQLite the account's live calls are counted by triggers as they change (store/live-calls.ts, migration 030). */
const BALANCE_AND_LIVE_COUNTED =
  'select a."balance_cents", coalesce(l."live", 0) as "live" from "accounts" a ' +
  'left join "account_live_calls" l on l."account_id" = a."id" where a."id" = ?';

export interface CallFilter {
  accountId: string;
  direction?: CallDirection;
  status?: CallStatus;
  /** Substring of from_number or to_number. */
  search?: string;
  /** Inclusive bounds on created_at, ISO-8601 UTC. */
  fromIso?: string;
  toIso?: string;
  /**
   * How `search` is found (SQLite): 'index' drives the query from the trigram index (fast when few calls
   * match); 'scan' walks the list order and tests each row (fast when most calls match). Default 'index'.
   */
  searchStrategy?: 'index' | 'scan';
}

/**
 * The FTS5 pre-filter for a substring: its last trigram only. Intersecting every trigram costs more than it
 * saves, because phone numbers share their leading trigrams (country and operator codes: posting lists as long
 * as the table), while the trailing digits are spread out (about 1 row in 1,000 per trigram). LIKE then decides.
 */
function trigramQuery(s: string): string {
  return `"${s.slice(-3).replace(/"/g, '""')}"`;
}

const escapeLike = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A query built by knex (its filters are chosen at run time), run by the store's driver. */
function rowsOf(db: Db, q: Parameters<typeof compiled>[0]) {
  const { sql, bindings } = compiled(q);
  return sqlOf(db).all(sql, bindings);
}

function applyFilter(db: Db, f: CallFilter) {
  const q = db('calls').where('account_id', f.accountId);
  if (f.direction) q.where('direction', f.direction);
  if (f.status) q.where('status', f.status);
  if (f.fromIso) q.where('created_at', '>=', f.fromIso);
  if (f.toIso) q.where('created_at', '<=', f.toIso);
  if (f.search) {
    const pat = `%${escapeLike(f.search)}%`;
    if (f.search.length >= 3 && f.searchStrategy !== 'scan' && !isPostgres(db))
      q.whereRaw(`calls.rowid in (${CALLS_SEARCH_CANDIDATES})`, [trigramQuery(f.search)]);
    q.where((w) => {
      w.whereRaw("from_number like ? escape '\\'", [pat]).orWhereRaw("to_number like ? escape '\\'", [pat]);
    });
  }
  return q;
}

/** A row's place in the list order (created_at desc, id desc). */
export interface CallPosition {
  created_at: string;
  id: string;
}

const NEWEST_FIRST = [
  { column: 'created_at', order: 'desc' as const },
  { column: 'id', order: 'desc' as const },
];

/** Filter, plus "at or after `from` in list order" when a known position is given. */
function fromPosition(db: Db, f: CallFilter, from?: CallPosition) {
  const q = applyFilter(db, f);
  if (from) q.whereRaw('(created_at, id) <= (?, ?)', [from.created_at, from.id]);
  return q;
}

/** The position of the row `offset` rows after `from` (or after the newest), or undefined past the end. */
export async function callPositionAt(
  db: Db,
  f: CallFilter,
  offset: number,
  from?: CallPosition,
): Promise<CallPosition | undefined> {
  const r = await rowsOf(
    db,
    fromPosition(db, f, from).select('created_at', 'id').orderBy(NEWEST_FIRST).limit(1).offset(offset),
  );
  return r[0] ? { created_at: r[0].created_at as string, id: r[0].id as string } : undefined;
}

/**
 * One page of calls, newest first (ties broken by id so pages never overlap). The page's ids are read from a
 * covering index (migration 004), then the rows are fetched by primary key: a deep offset skips index entries,
 * not whole rows. With `from`, the offset counts from that known position instead of from the newest call.
 */
export async function listCalls(
  db: Db,
  f: CallFilter,
  limit: number,
  offset: number,
  from?: CallPosition,
): Promise<CallRow[]> {
  const ids = await rowsOf(
    db,
    fromPosition(db, f, from).select('id').orderBy(NEWEST_FIRST).limit(limit).offset(offset),
  );
  if (ids.length === 0) return [];
  const rows = await selectRows(
    db,
    `select * from "calls" where "id" in (${ids.map(() => '?').join(', ')})`,
    ids.map((r) => r.id),
  );
  const byId = new Map(rows.map((r) => [r.id, normaliseCall(r)]));
  return ids.map((r) => byId.get(r.id)).filter((r): r is CallRow => r !== undefined);
}

export async function countCalls(db: Db, f: CallFilter): Promise<number> {
  const [r] = await rowsOf(db, applyFilter(db, f).count({ n: '*' }));
  return Number(r?.n ?? 0);
}
