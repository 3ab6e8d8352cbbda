/**
/**
 * Kept registrations (migrations 010, 039), each with the node that took it. The registrar writes its end-users'
 * sets after changes, many at a time (sip/registration-writer.ts), and reads its live UDP ones back at start-up;
 * another node reads them to reach a phone registered there (remoteBindings). Rows only: the Binding shape lives in
 * sip/location.ts.
 */
import { inTransaction, isPostgres, type Db, type Tx } from './db.js';
import { insertRows, runSql, runSqlCount, selectRows } from './fixed-sql.js';
import type { RegistrationState } from './end-users.js';
import { storeNodeId } from './node-identity.js';

export interface RegistrationRow {
  end_user_id: string;
  contact: string;
  account_id: string;
  extension: string;
  source_address: string;
  source_port: number;
  flow_id: string;
  token_id: string;
  call_id: string;
  cseq: number;
  registered_at: number;
  expires_at: number;
  /** The node that took the REGISTER (and holds the connection of a stream binding); null before nodes. */
  node_id: string | null;
  /** UDP, TCP, TLS, WS or WSS. */
  transport: string;
  /** Set when its node was declared gone holding the phone's connection; cleared by the next REGISTER. */
  unreachable_at: string | null;
  /** The binding's Path (RFC 3327) as a JSON array of header values; null without one (migration 040). */
  path?: string | null;
}

/**
 * The node whose rows this process writes and restores: on PostgreSQL (nodes share the store) its own; on SQLite
 * (one box) undefined, every row (a restart under another host name still finds its phones).
 */
const ownNode = (db: Db | Tx): string | undefined => (isPostgres(db) ? (storeNodeId() ?? '') : undefined);

const toRow = (r: Record<string, unknown>): RegistrationRow => ({
  ...(r as unknown as RegistrationRow),
  source_port: Number(r.source_port),
  cseq: Number(r.cseq),
  registered_at: Number(r.registered_at),
  expires_at: Number(r.expires_at),
  node_id: (r.node_id as string | null) ?? null,
  transport: (r.transport as string | undefined) ?? 'UDP',
  unreachable_at: (r.unreachable_at as string | null) ?? null,
  path: typeof r.path === 'string' ? r.path : null,
});

/** A stored Path (a JSON array of strings); anything else, written by another hand, is read as none. */
export function storedPath(text: string): string[] | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string') ? v : undefined;
  } catch {
    return undefined;
  }
}

/** One end-user's registration as the registrar has it now: its state, when it last registered, its kept rows. */
export interface RegistrationWrite {
  endUserId: string;
  state: RegistrationState;
  /** ISO-8601; left as stored when undefined. */
  lastRegisteredAt?: string;
  /** Every kept registration of the end-user (the ones stored before are replaced). */
  rows: RegistrationRow[];
  /**
   * The rows are the ones written last for this end-user, the same contacts from the same place, only their
   * expiry and request moved (a refresh): each is updated in place, or inserted when missing, instead of the
   * end-user's rows being deleted and inserted again.
   */
  refresh?: boolean;
}

/**
/**
 * Writes many end-users' registrations in one transaction (the registrar's group commit): their kept registrations
 * of this node replaced (a contact another node held moves here: the newest REGISTER wins), and their state and
 * time of last registration on end_users (unregistered only while no other node holds a live binding). Multi-row
 * statements of fixed text, cut into chunks of 64, 8 and 1 so that only a few texts exist (each is prepared once),
 * whatever the batch size.
 */
export async function writeRegistrations(db: Db | Tx, writes: RegistrationWrite[], nowMs = Date.now()): Promise<void> {
  if (writes.length === 0) return;
  const node = ownNode(db);
  await inTransaction(db, async (tx) => {
    const refreshed = writes.filter((w) => w.refresh === true).flatMap((w) => w.rows);
    for (const part of chunks(refreshed)) {
      const bindings: unknown[] = [];
      for (const r of part) for (const c of REGISTRATION_COLUMNS) bindings.push(r[c] ?? null);
      await runSql(tx, refreshText(part.length, node !== undefined), bindings, 'registrations');
    }
    const replaced = writes.filter((w) => w.refresh !== true);
    for (const ids of chunks(replaced.map((w) => w.endUserId))) {
      if (node === undefined) await runSql(tx, statement('deleteAll', ids.length), ids, 'registrations');
      else await runSql(tx, statement('delete', ids.length), [...ids, node], 'registrations');
    }
    const rows = replaced.flatMap((w) => w.rows);
    for (const part of chunks(rows)) {
      await runSql(
        tx,
        statement('moved', part.length),
        part.flatMap((r) => [r.end_user_id, r.contact]),
        'registrations',
      );
      await insertRows(tx, 'registrations', part as unknown as Record<string, unknown>[]);
    }
    const timed = writes.filter((w) => w.lastRegisteredAt !== undefined && w.state === 'registered');
    for (const part of chunks(timed)) {
      await runSql(
        tx,
        statement('timed', part.length),
        [...part.flatMap((w) => [w.endUserId, w.lastRegisteredAt!]), ...part.map((w) => w.endUserId)],
        REGISTRATION_WRITE,
      );
    }
    const done = new Set(timed);
    const plain = writes.filter((w) => w.state === 'registered' && !done.has(w)).map((w) => w.endUserId);
    for (const ids of chunks(plain)) {
      await runSql(tx, statement('state', ids.length), ['registered', ...ids], STATE_WRITE);
    }
    const gone = writes.filter((w) => w.state === 'unregistered').map((w) => w.endUserId);
    for (const ids of chunks(gone))
      await runSql(tx, statement('unregistered', ids.length), [...ids, nowMs], STATE_WRITE);
  });
}

const texts = new Map<string, string>();
/** What the end_users statements set: the registration columns only (phone credentials are not among them). */
const REGISTRATION_WRITE = { table: 'end_users', columns: ['registration_state', 'last_registered_at'] };
const STATE_WRITE = { table: 'end_users', columns: ['registration_state'] };

/** The fixed text of one of writeRegistrations' statements for `n` end-users (n is 64, 8 or 1). */
function statement(kind: 'timed' | 'state' | 'unregistered' | 'delete' | 'deleteAll' | 'moved', n: number): string {
  const key = `${kind}${n}`;
  let sql = texts.get(key);
  if (sql !== undefined) return sql;
  const list = `(${Array(n).fill('?').join(', ')})`;
  if (kind === 'timed') {
    sql =
      `update "end_users" set "registration_state" = 'registered', "last_registered_at" = case "id" ` +
      `${Array(n).fill('when ? then ?').join(' ')} end where "id" in ${list}`;
  } else if (kind === 'state') {
    sql = `update "end_users" set "registration_state" = ? where "id" in ${list}`;
  } else if (kind === 'unregistered') {
    sql =
      `update "end_users" set "registration_state" = 'unregistered' where "id" in ${list} and not exists ` +
      `(select 1 from "registrations" r where r."end_user_id" = "end_users"."id" and r."expires_at" > ? ` +
      `and r."unreachable_at" is null)`;
  } else if (kind === 'deleteAll') {
    sql = `delete from "registrations" where "end_user_id" in ${list}`;
  } else if (kind === 'delete') {
    // This node's rows and rows no node took (written before nodes were recorded).
    sql = `delete from "registrations" where "end_user_id" in ${list} and ("node_id" is null or "node_id" = ?)`;
  } else {
    sql = `delete from "registrations" where ${Array(n).fill('("end_user_id" = ? and "contact" = ?)').join(' or ')}`;
  }
  texts.set(key, sql);
  return sql;
}

/** A registrations row's columns, in the order refreshText binds them. */
const REGISTRATION_COLUMNS = [
  'end_user_id',
  'contact',
  'account_id',
  'extension',
  'source_address',
  'source_port',
  'flow_id',
  'token_id',
  'call_id',
  'cseq',
  'registered_at',
  'expires_at',
  'node_id',
  'transport',
  'unreachable_at',
  'path',
] as const satisfies ReadonlyArray<keyof RegistrationRow>;

/**
 * Refreshed rows as an upsert on the key: a refresh changes no indexed column but the expiry (and, on PostgreSQL,
 * the node, when another node had taken the contact since), so the row is updated in place; deleting and inserting
 * it again wrote every index of the table twice.
 */
function refreshText(n: number, nodes: boolean): string {
  const key = `refresh${n}${nodes}`;
  let sql = texts.get(key);
  if (sql !== undefined) return sql;
  const one = `(${REGISTRATION_COLUMNS.map(() => '?').join(', ')})`;
  const set = REGISTRATION_COLUMNS.filter(
    (c) => !['end_user_id', 'contact', 'account_id', 'extension'].includes(c) && (nodes || c !== 'node_id'),
  );
  sql =
    `insert into "registrations" (${REGISTRATION_COLUMNS.map((c) => `"${c}"`).join(', ')}) values ` +
    `${Array(n).fill(one).join(', ')} on conflict ("end_user_id", "contact") do update set ` +
    set.map((c) => `"${c}" = excluded."${c}"`).join(', ');
  texts.set(key, sql);
  return sql;
}

/** `xs` in consecutive pieces of 64, then 8, then 1. */
function* chunks<T>(xs: T[]): Generator<T[]> {
  let i = 0;
  for (const size of [64, 8, 1]) {
    for (; i + size <= xs.length; i += size) yield xs.slice(i, i + size);
  }
}

/**
 * This node's UDP registrations still live at `nowMs` whose phone token is still valid and whose end-user is still
 * active (a token revoked or an end-user disabled while the switch was down does not come back).
 */
export async function liveRegistrations(db: Db | Tx, nowMs: number): Promise<RegistrationRow[]> {
  const nowIso = new Date(nowMs).toISOString();
  const node = ownNode(db);
  const rows = await selectRows(
    db,
    LIVE_REGISTRATIONS + (node === undefined ? '' : ' and coalesce("r"."node_id", \'\') = ?'),
    node === undefined ? [nowMs, nowIso, true] : [nowMs, nowIso, true, node],
  );
  return rows.map(toRow);
}

const LIVE_REGISTRATIONS =
  'select "r".* from "registrations" as "r" inner join "phone_tokens" as "t" on "t"."id" = "r"."token_id" ' +
  'inner join "end_users" as "u" on "u"."id" = "r"."end_user_id" where "r"."expires_at" > ? ' +
  'and "t"."revoked_at" is null and "t"."expires_at" > ? and "u"."is_active" = ? and "u"."deleted_at" is null ' +
  'and "r"."transport" = \'UDP\'';

/**
 * Of this node's rows keeps exactly `keep` (the live UDP ones): expired ones, revoked or disabled end-users' and the
 * connections of its previous process go, in one transaction; other nodes' rows stay, but expired ones go too.
 */
export async function pruneRegistrations(db: Db | Tx, keep: RegistrationRow[], nowMs = Date.now()): Promise<void> {
  const node = ownNode(db);
  await inTransaction(db, async (tx) => {
    if (node === undefined) await runSql(tx, 'delete from "registrations"', [], 'registrations');
    else await runSql(tx, 'delete from "registrations" where coalesce("node_id", \'\') = ?', [node], 'registrations');
    await runSql(tx, 'delete from "registrations" where "expires_at" <= ?', [nowMs], 'registrations');
    const rows = keep.map((r) => ({ ...r, node_id: storeNodeId() ?? null }));
    for (let i = 0; i < rows.length; i += 200)
      await insertRows(tx, 'registrations', rows.slice(i, i + 200) as unknown as Record<string, unknown>[]);
  });
}

/**
 * The live bindings of an extension that other nodes took and that this node can reach itself: UDP ones (sent
 * straight to the phone's address) and ones with a Path (sent to the front holding the phone's connection), whatever
 * their node's state. Phone token valid, end-user active.
 */
export async function remoteRegistrations(
  db: Db,
  accountId: string,
  extension: string,
  nowMs: number,
): Promise<RegistrationRow[]> {
  const rows = await selectRows(
    db,
    'select "r".* from "registrations" as "r" inner join "phone_tokens" as "t" on "t"."id" = "r"."token_id" ' +
      'inner join "end_users" as "u" on "u"."id" = "r"."end_user_id" where "r"."account_id" = ? ' +
      'and "r"."extension" = ? and ("r"."transport" = \'UDP\' or "r"."path" is not null) ' +
      'and coalesce("r"."node_id", \'\') <> ? ' +
      'and "r"."expires_at" > ? and "r"."unreachable_at" is null and "t"."revoked_at" is null ' +
      'and "t"."expires_at" > ? and "u"."is_active" = ? and "u"."deleted_at" is null',
    [accountId, extension, storeNodeId() ?? '', nowMs, new Date(nowMs).toISOString(), true],
  );
  return rows.map(toRow);
}

/** An end-user with no live, reachable binding left anywhere. */
const NO_LIVE_BINDING =
  'not exists (select 1 from "registrations" "r" where "r"."end_user_id" = "end_users"."id" ' +
  'and "r"."expires_at" > ? and "r"."unreachable_at" is null)';

/**
 * A node declared gone held the connections of its stream bindings (TCP, TLS, WebSocket): they are marked
 * unreachable until their phones register again. Its UDP bindings stay: the phone's address still reaches it; so
 * do bindings with a Path: the front holds the phone's connection, and any node reaches it through the front.
 */
export async function markRegistrationsUnreachable(db: Db | Tx, nodeId: string, at: string): Promise<number> {
  const nowMs = Date.parse(at);
  return inTransaction(db, async (tx) => {
    const users = (
      await selectRows(
        tx,
        'select distinct "end_user_id" from "registrations" where "node_id" = ? and not "transport" = ? ' +
          'and "path" is null and "unreachable_at" is null',
        [nodeId, 'UDP'],
      )
    ).map((r) => r.end_user_id as string);
    if (users.length === 0) return 0;
    const n = await runSqlCount(
      tx,
      'update "registrations" set "unreachable_at" = ? where "node_id" = ? and not "transport" = ? ' +
        'and "path" is null and "unreachable_at" is null',
      [at, nodeId, 'UDP'],
      { table: 'registrations', columns: ['unreachable_at'] },
    );
    // Their end-users are unregistered unless a binding elsewhere still reaches them.
    for (let i = 0; i < users.length; i += 500) {
      const some = users.slice(i, i + 500);
      await runSql(
        tx,
        `update "end_users" set "registration_state" = ? where "id" in (${some.map(() => '?').join(', ')}) and ` +
          NO_LIVE_BINDING,
        ['unregistered', ...some, nowMs],
        STATE_WRITE,
      );
    }
    return n;
  });
}
