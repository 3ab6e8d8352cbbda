import type { Db } from './db.js';

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
  await db('nodes')
    .insert({ ...row, gone_at: null, gone_by: null })
    .onConflict('id')
    .merge([
      'state',
      'version',
      'sip_address',
      'http_address',
      'pid',
      'live_calls',
      'started_at',
      'heartbeat_at',
      'gone_at',
      'gone_by',
    ]);
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
  const n = await db('nodes')
    .where({ id: row.id })
    .whereNot({ state: 'gone' })
    .update({ state: row.state, live_calls: row.live_calls, heartbeat_at: row.heartbeat_at });
  return n > 0;
}

export async function findNode(db: Db, id: string): Promise<NodeRow | undefined> {
  const r = (await db('nodes').where({ id }).first()) as NodeRow | undefined;
  return r && { ...r, pid: Number(r.pid), live_calls: Number(r.live_calls) };
}

export async function listNodes(db: Db): Promise<NodeRow[]> {
  const rows = (await db('nodes').orderBy('id').select('*')) as NodeRow[];
  return rows.map((r) => ({ ...r, pid: Number(r.pid), live_calls: Number(r.live_calls) }));
}

/**
 * Marks as gone every node other than `survivor` still counted in service (up or draining) whose heartbeat is
 * older than `staleBefore`, and answers the ids this call marked. The update is conditional, so when several
 * survivors look at once each node is marked, and its calls closed, by exactly one.
 */
export async function claimGoneNodes(db: Db, survivor: string, staleBefore: string, now: string): Promise<string[]> {
  const stale = (await db('nodes')
    .whereIn('state', ['up', 'draining'])
    .whereNot({ id: survivor })
    .where('heartbeat_at', '<', staleBefore)
    .pluck('id')) as string[];
  const claimed: string[] = [];
  for (const id of stale) {
    const n = await db('nodes')
      .where({ id })
      .whereIn('state', ['up', 'draining'])
      .where('heartbeat_at', '<', staleBefore)
      .update({ state: 'gone', gone_at: now, gone_by: survivor });
    if (n > 0) claimed.push(id);
  }
  return claimed;
}

/** A node that stopped in order (its calls ended): not to be taken over. */
export async function markNodeStopped(db: Db, id: string, now: string): Promise<void> {
  await db('nodes').where({ id }).update({ state: 'stopped', live_calls: 0, heartbeat_at: now });
}
