/**
 * Kept registrations (migrations 010, 039), each with the node that took it. The registrar writes its end-users'
 * sets after changes, many at a time (sip/registration-writer.ts), and reads its live UDP ones back at start-up;
 * another node reads them to reach a phone registered there (remoteBindings). Rows only: the Binding shape lives in
 * sip/location.ts.
 */
import { inTransaction, isPostgres, type Db } from './db.js';
import { insertRows, runSql } from './fixed-sql.js';
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
}

/**
 * The node whose rows this process writes and restores: on PostgreSQL (nodes share the store) its own; on SQLite
 * (one box) undefined, every row (a restart under another host name still finds its phones).
 */
const ownNode = (db: Db): string | undefined => (isPostgres(db) ? (storeNodeId() ?? '') : undefined);

const toRow = (r: Record<string, unknown>): RegistrationRow => ({
  ...(r as unknown as RegistrationRow),
  source_port: Number(r.source_port),
  cseq: Number(r.cseq),
  registered_at: Number(r.registered_at),
  expires_at: Number(r.expires_at),
  node_id: (r.node_id as string | null) ?? null,
  transport: (r.transport as string | undefined) ?? 'UDP',
  unreachable_at: (r.unreachable_at as string | null) ?? null,
});

/** One end-user's registration as the registrar has it now: its state, when it last registered, its kept rows. */
export interface RegistrationWrite {
  endUserId: string;
  state: RegistrationState;
  /** ISO-8601; left as stored when undefined. */
  lastRegisteredAt?: string;
  /** Every kept registration of the end-user (the ones stored before are replaced). */
  rows: RegistrationRow[];
}

/**
 * Writes many end-users' registrations in one transaction (the registrar's group commit): their kept registrations
 * of this node replaced (a contact another node held moves here: the newest REGISTER wins), and their state and
 * time of last registration on end_users (unregistered only while no other node holds a live binding). Multi-row statements of fixed text, cut
 * into chunks of 64, 8 and 1 so that only a few texts exist (each is prepared once), whatever the batch size; on the
 * switch's SQLite store they run on its connection directly (store/fixed-sql.ts, store/direct-transaction.ts), not
 * through knex's query builder (about a tenth of the switch's CPU per registration in the register bench).
 */
export async function writeRegistrations(db: Db, writes: RegistrationWrite[], nowMs = Date.now()): Promise<void> {
  if (writes.length === 0) return;
  const node = ownNode(db);
  await inTransaction(db, async (tx) => {
    for (const ids of chunks(writes.map((w) => w.endUserId))) {
      if (node === undefined) await runSql(tx, statement('deleteAll', ids.length), ids);
      else await runSql(tx, statement('delete', ids.length), [...ids, node]);
    }
    const rows = writes.flatMap((w) => w.rows);
    for (const part of chunks(rows)) {
      await runSql(
        tx,
        statement('moved', part.length),
        part.flatMap((r) => [r.end_user_id, r.contact]),
      );
      await insertRows(tx, 'registrations', part as unknown as Record<string, unknown>[]);
    }
    const timed = writes.filter((w) => w.lastRegisteredAt !== undefined && w.state === 'registered');
    for (const part of chunks(timed)) {
      await runSql(tx, statement('timed', part.length), [
        ...part.flatMap((w) => [w.endUserId, w.lastRegisteredAt!]),
        ...part.map((w) => w.endUserId),
      ]);
    }
    const done = new Set(timed);
    const plain = writes.filter((w) => w.state === 'registered' && !done.has(w)).map((w) => w.endUserId);
    for (const ids of chunks(plain)) await runSql(tx, statement('state', ids.length), ['registered', ...ids]);
    const gone = writes.filter((w) => w.state === 'unregistered').map((w) => w.endUserId);
    for (const ids of chunks(gone)) await runSql(tx, statement('unregistered', ids.length), [...ids, nowMs]);
  });
}

const texts = new Map<string, string>();

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
    sql = `delete from "registrations" where "end_user_id" in ${list} and coalesce("node_id", '') = ?`;
  } else {
    sql = `delete from "registrations" where ${Array(n).fill('("end_user_id" = ? and "contact" = ?)').join(' or ')}`;
  }
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
export async function liveRegistrations(db: Db, nowMs: number): Promise<RegistrationRow[]> {
  const nowIso = new Date(nowMs).toISOString();
  const node = ownNode(db);
  const rows = await db('registrations as r')
    .modify((q) => (node === undefined ? q : q.whereRaw(`coalesce(r.node_id, '') = ?`, [node])))
    .where('r.transport', 'UDP')
    .join('phone_tokens as t', 't.id', 'r.token_id')
    .join('end_users as u', 'u.id', 'r.end_user_id')
    .where('r.expires_at', '>', nowMs)
    .whereNull('t.revoked_at')
    .where('t.expires_at', '>', nowIso)
    .where('u.is_active', true)
    .whereNull('u.deleted_at')
    .select('r.*');
  return rows.map(toRow);
}

/**
 * Of this node's rows keeps exactly `keep` (the live UDP ones): expired ones, revoked or disabled end-users' and the
 * connections of its previous process go, in one transaction; other nodes' rows stay, but expired ones go too.
 */
export async function pruneRegistrations(db: Db, keep: RegistrationRow[], nowMs = Date.now()): Promise<void> {
  const node = ownNode(db);
  await db.transaction(async (trx) => {
    await trx('registrations')
      .modify((q) => (node === undefined ? q : q.whereRaw(`coalesce(node_id, '') = ?`, [node])))
      .delete();
    await trx('registrations').where('expires_at', '<=', nowMs).delete();
    if (keep.length > 0)
      await trx.batchInsert(
        'registrations',
        keep.map((r) => ({ ...r, node_id: storeNodeId() })),
        200,
      );
  });
}

/**
 * The live bindings of an extension that other nodes took and that this node can reach itself: UDP ones (sent
 * straight to the phone's address), whatever their node's state. Phone token valid, end-user active.
 */
export async function remoteRegistrations(
  db: Db,
  accountId: string,
  extension: string,
  nowMs: number,
): Promise<RegistrationRow[]> {
  const rows = await db('registrations as r')
    .join('phone_tokens as t', 't.id', 'r.token_id')
    .join('end_users as u', 'u.id', 'r.end_user_id')
    .where({ 'r.account_id': accountId, 'r.extension': extension, 'r.transport': 'UDP' })
    .whereRaw(`coalesce(r.node_id, '') <> ?`, [storeNodeId() ?? ''])
    .where('r.expires_at', '>', nowMs)
    .whereNull('r.unreachable_at')
    .whereNull('t.revoked_at')
    .where('t.expires_at', '>', new Date(nowMs).toISOString())
    .where('u.is_active', true)
    .whereNull('u.deleted_at')
    .select('r.*');
  return rows.map(toRow);
}

/**
 * A node declared gone held the connections of its stream bindings (TCP, TLS, WebSocket): they are marked
 * unreachable until their phones register again. Its UDP bindings stay: the phone's address still reaches it.
 */
export async function markRegistrationsUnreachable(db: Db, nodeId: string, at: string): Promise<number> {
  const nowMs = Date.parse(at);
  return db.transaction(async (trx) => {
    const users = (await trx('registrations')
      .where({ node_id: nodeId })
      .whereNot({ transport: 'UDP' })
      .whereNull('unreachable_at')
      .distinct()
      .pluck('end_user_id')) as string[];
    if (users.length === 0) return 0;
    const n = await trx('registrations')
      .where({ node_id: nodeId })
      .whereNot({ transport: 'UDP' })
      .whereNull('unreachable_at')
      .update({ unreachable_at: at });
    // Their end-users are unregistered unless a binding elsewhere still reaches them.
    for (let i = 0; i < users.length; i += 500)
      await trx('end_users')
        .whereIn('id', users.slice(i, i + 500))
        .whereNotExists((q) =>
          q
            .select(trx.raw('1'))
            .from('registrations as r')
            .whereRaw('r.end_user_id = end_users.id')
            .where('r.expires_at', '>', nowMs)
            .whereNull('r.unreachable_at'),
        )
        .update({ registration_state: 'unregistered' });
    return n;
  });
}
