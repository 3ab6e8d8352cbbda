import type { Db } from './db.js';
import { firstRow, insertRows, runSql, runSqlCount, selectRows } from './fixed-sql.js';
import { sha256Hex } from './ids.js';

/** Who signed in to the portal (an account's user) or to the operator console. */
export type WebSessionKind = 'portal' | 'console';

export interface WebSessionRow {
  kind: WebSessionKind;
  /** The portal user's or the operator's id. */
  user_id: string;
  /** The portal user's account; null for the console. */
  account_id: string | null;
  email: string;
  /** The API key a portal session's requests run under; null for the console. */
  api_key_id: string | null;
  /** Milliseconds since the epoch, on the signing-in node's clock. */
  created_at: number;
  last_seen_at: number;
}

const normalise = (r: any): WebSessionRow => ({
  kind: r.kind,
  user_id: r.user_id,
  account_id: r.account_id ?? null,
  email: r.email,
  api_key_id: r.api_key_id ?? null,
  created_at: Number(r.created_at),
  last_seen_at: Number(r.last_seen_at),
});

/**
 * Sessions of the portal and the console live in the store, so every node sharing it honours a cookie any of them
 * set. Only the SHA-256 of the session id (the cookie's value) is stored: reading the table gives no session.
 */
export async function insertWebSession(db: Db, sessionId: string, row: WebSessionRow): Promise<void> {
  await insertRows(db, 'web_sessions', [{ id_hash: sha256Hex(sessionId), ...row }]);
}

export async function findWebSession(
  db: Db,
  kind: WebSessionKind,
  sessionId: string,
): Promise<WebSessionRow | undefined> {
  const r = await firstRow(db, 'select * from "web_sessions" where "id_hash" = ? and "kind" = ?', [
    sha256Hex(sessionId),
    kind,
  ]);
  return r ? normalise(r) : undefined;
}

/** Notes the session was used at `at` (callers write it at most once a minute a session). */
export async function touchWebSession(db: Db, sessionId: string, at: number): Promise<void> {
  await runSql(db, 'update "web_sessions" set "last_seen_at" = ? where "id_hash" = ?', [at, sha256Hex(sessionId)], {
    table: 'web_sessions',
    columns: ['last_seen_at'],
  });
}

/**
 * Ends a session: true for the one caller whose delete found it (of several nodes ending it at once, only that one
 * revokes its key).
 */
export async function deleteWebSession(db: Db, sessionId: string): Promise<WebSessionRow | undefined> {
  return takeWebSession(db, sha256Hex(sessionId));
}

async function takeWebSession(db: Db, idHash: string): Promise<WebSessionRow | undefined> {
  const r = await firstRow(db, 'select * from "web_sessions" where "id_hash" = ?', [idHash]);
  if (!r) return undefined;
  const n = await runSqlCount(db, 'delete from "web_sessions" where "id_hash" = ?', [idHash], 'web_sessions');
  return n === 1 ? normalise(r) : undefined;
}

/**
 * Ends the sessions of `kind` idle since before `idleBefore` or begun before `createdBefore`, and returns the ones
 * this caller ended (any node's sweep may run at the same moment; each session is ended by one of them).
 */
export async function endExpiredWebSessions(
  db: Db,
  kind: WebSessionKind,
  idleBefore: number,
  createdBefore: number,
): Promise<WebSessionRow[]> {
  const rows = await selectRows(
    db,
    'select "id_hash" from "web_sessions" where "kind" = ? and ("last_seen_at" < ? or "created_at" < ?) limit 1000',
    [kind, idleBefore, createdBefore],
  );
  const ended: WebSessionRow[] = [];
  for (const r of rows as Array<{ id_hash: string }>) {
    const s = await takeWebSession(db, r.id_hash);
    if (s) ended.push(s);
  }
  return ended;
}
