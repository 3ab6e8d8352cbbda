import type { Db } from './db.js';
import { firstRow, runSqlCount, selectRows, updateRowCount, upsertRow } from './fixed-sql.js';
import { releaseOutboxLeases } from './event-outbox.js';
import { markRegistrationsUnreachable } from './registrations.js';

export type NodeState = 'up' | 'draining' | 'stopped' | 'gone';

export interface NodeRow {
  id: string;
  state: NodeState;
  version: string;
  sip_address: string;
  http_address: string;
  pid: number;
  live_calls: number;
  started_at: string;
  heartbeat_at: string;
  gone_at: string | null;
  gone_by: string | null;
}

/** Writes this node's row: at start (a new row, or a node of the same id coming back) and at each heartbeat. */
export async function writeNodeHeartbeat(db: Db, row: Omit<NodeRow, 'gone_at' | 'gone_by'>): Promise<void> {
  await upsertRow(db, 'nodes', { ...row, gone_at: null, gone_by: null }, ['id']);
}

/**
 * A heartbeat of a node that has written its row: state, live calls and time, only while the row does not say
 * gone. False when no row was written: a survivor declared the node gone while it was silent (and closed its
 * calls), or the row is missing.
 */
export async function beatNode(
  db: Db,
  row: Pick<NodeRow, 'id' | 'state' | 'live_calls' | 'heartbeat_at'>,
): Promise<boolean> {
  const n = await runSqlCount(
    db,
    'update "nodes" set "state" = ?, "live_calls" = ?, "heartbeat_at" = ? where "id" = ? and not "state" = ?',
    [row.state, row.live_calls, row.heartbeat_at, row.id, 'gone'],
    { table: 'nodes', columns: ['state', 'live_calls', 'heartbeat_at'] },
  );
  return n > 0;
}

export async function findNode(db: Db, id: string): Promise<NodeRow | undefined> {
  const r = (await firstRow(db, 'select * from "nodes" where "id" = ? limit 1', [id])) as NodeRow | undefined;
  return r && { ...r, pid: Number(r.pid), live_calls: Number(r.live_calls) };
}

export async function listNodes(db: Db): Promise<NodeRow[]> {
  const rows = (await selectRows(db, 'select * from "nodes" order by "id" asc', [])) as unknown as NodeRow[];
  return rows.map((r) => ({ ...r, pid: Number(r.pid), live_calls: Number(r.live_calls) }));
}

/**
 * Marks as gone every node other than `survivor` still counted in service (up or draining) whose heartbeat is
 * older than `staleBefore`, and answers the ids this call marked. The update is conditional, so when several
 * survivors look at once each node is marked, and its calls closed, by exactly one. Its bindings over connections
 * it held are marked unreachable (store/registrations.ts), and its status-callback leases end (due at once): its
 * pending callbacks go out from the others without waiting out their leases.
 */
export async function claimGoneNodes(db: Db, survivor: string, staleBefore: string, now: string): Promise<string[]> {
  const stale = (
    await selectRows(db, 'select "id" from "nodes" where "state" in (?, ?) and not "id" = ? and "heartbeat_at" < ?', [
      'up',
      'draining',
      survivor,
      staleBefore,
    ])
  ).map((r) => r.id as string);
  const claimed: string[] = [];
  for (const id of stale) {
    const n = await runSqlCount(
      db,
      'update "nodes" set "state" = ?, "gone_at" = ?, "gone_by" = ? ' +
        'where "id" = ? and "state" in (?, ?) and "heartbeat_at" < ?',
      ['gone', now, survivor, id, 'up', 'draining', staleBefore],
      { table: 'nodes', columns: ['state', 'gone_at', 'gone_by'] },
    );
    if (n > 0) {
      claimed.push(id);
      await markRegistrationsUnreachable(db, id, now);
      await releaseOutboxLeases(db, id, now);
    }
  }
  return claimed;
}

/**
 * A node that stopped in order (its calls ended): not to be taken over. The connections it held are closed, so its
 * stream bindings left in the store are unreachable.
 */
export async function markNodeStopped(db: Db, id: string, now: string): Promise<void> {
  await updateRowCount(
    db,
    'nodes',
    { column: 'id', value: id },
    { state: 'stopped', live_calls: 0, heartbeat_at: now },
  );
  await markRegistrationsUnreachable(db, id, now);
}
