import { randomBytes } from 'node:crypto';
import type { Db } from './db.js';

/** What a room lease names: a conference or a queue of an account. */
export type RoomKind = 'conference' | 'queue';

/** The node holding a room, and where it takes SIP. */
export interface RoomHolder {
  nodeId: string;
  sipAddress: string;
}

interface LeaseRow {
  node_id: string;
  state: string | null;
  heartbeat_at: string | null;
  sip_address: string | null;
}

const key = (kind: RoomKind, accountId: string, name: string) => ({ kind, account_id: accountId, name });

async function readLease(db: Db, kind: RoomKind, accountId: string, name: string): Promise<LeaseRow | undefined> {
  return (await db('room_leases as l')
    .leftJoin('nodes as n', 'n.id', 'l.node_id')
    .where({ 'l.kind': kind, 'l.account_id': accountId, 'l.name': name })
    .first('l.node_id', 'n.state', 'n.heartbeat_at', 'n.sip_address')) as LeaseRow | undefined;
}

/**
 * The node holding an account's room: `node` when nobody held it (the lease is taken in one insert, so of nodes
 * asking at once exactly one wins), or when its holder is out of service (gone, stopped, or silent since
 * `staleBefore`), taken over by a conditional update; else the holder, up or draining. A draining `node` takes no
 * new room: a free one is left to the node in service with the fewest calls, which takes it when the caller's leg
 * reaches it (`node` itself when no other is in service).
 */
export async function takeRoomLease(
  db: Db,
  o: {
    kind: RoomKind;
    accountId: string;
    name: string;
    node: string;
    sipAddress: string;
    staleBefore: string;
    now: string;
  },
): Promise<RoomHolder> {
  const k = key(o.kind, o.accountId, o.name);
  const self = (await db('nodes').where({ id: o.node }).first('state')) as { state: string } | undefined;
  const draining = self?.state === 'draining';
  for (let attempt = 0; attempt < 3; attempt++) {
    if (draining) {
      const elsewhere = await inServiceNode(db, o.node, o.staleBefore);
      const held = await readLease(db, o.kind, o.accountId, o.name);
      if (!held && elsewhere) return elsewhere;
    }
    await db('room_leases')
      .insert({ ...k, node_id: o.node, taken_at: o.now })
      .onConflict(['kind', 'account_id', 'name'])
      .ignore();
    const lease = await readLease(db, o.kind, o.accountId, o.name);
    if (!lease) continue; // released between the insert and the read
    if (lease.node_id === o.node) return { nodeId: o.node, sipAddress: o.sipAddress };
    const inService =
      (lease.state === 'up' || lease.state === 'draining') &&
      lease.heartbeat_at !== null &&
      lease.heartbeat_at >= o.staleBefore;
    if (inService && lease.sip_address) return { nodeId: lease.node_id, sipAddress: lease.sip_address };
    await db('room_leases')
      .where({ ...k, node_id: lease.node_id })
      .update({ node_id: o.node, taken_at: o.now });
  }
  throw new Error(`room lease ${o.kind} ${o.name}: no holder after three attempts`);
}

/** The node up (not draining), heard from since `staleBefore`, other than `not`, with the fewest live calls. */
async function inServiceNode(db: Db, not: string, staleBefore: string): Promise<RoomHolder | undefined> {
  const n = (await db('nodes')
    .where({ state: 'up' })
    .whereNot({ id: not })
    .where('heartbeat_at', '>=', staleBefore)
    .orderBy([{ column: 'live_calls' }, { column: 'id' }])
    .first('id', 'sip_address')) as { id: string; sip_address: string } | undefined;
  return n && { nodeId: n.id, sipAddress: n.sip_address };
}

/** The room ended on `node`: its lease is free (a lease another node took since is left alone). */
export async function releaseRoomLease(
  db: Db,
  o: { kind: RoomKind; accountId: string; name: string; node: string },
): Promise<void> {
  await db('room_leases')
    .where({ ...key(o.kind, o.accountId, o.name), node_id: o.node })
    .delete();
}

/** Every lease `node` holds is freed: it is gone (a survivor's takeover) or starting again with no rooms. */
export async function releaseNodeLeases(db: Db, node: string): Promise<number> {
  return db('room_leases').where({ node_id: node }).delete();
}

/**
 * A secret every node sharing the store knows, for one purpose (nodes signing their legs to each other, the server
 * secret): made by the first node that asks (from `proposed` when given), read by the others. The store is what the
 * nodes trust already.
 */
export async function nodeSecret(db: Db, purpose: string, proposed?: string): Promise<string> {
  const secret = proposed ?? randomBytes(32).toString('base64url');
  await db('node_secrets')
    .insert({ purpose, secret, created_at: new Date().toISOString() })
    .onConflict('purpose')
    .ignore();
  const row = (await db('node_secrets').where({ purpose }).first('secret')) as { secret: string };
  return row.secret;
}
