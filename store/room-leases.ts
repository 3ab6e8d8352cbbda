import { randomBytes } from 'node:crypto';
import type { Db } from './db.js';
import { firstRow, runSql, runSqlCount } from './fixed-sql.js';

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

async function readLease(db: Db, kind: RoomKind, accountId: string, name: string): Promise<LeaseRow | undefined> {
  return (await firstRow(
    db,
    'select "l"."node_id", "n"."state", "n"."heartbeat_at", "n"."sip_address" from "room_leases" as "l" ' +
      'left join "nodes" as "n" on "n"."id" = "l"."node_id" where "l"."kind" = ? and "l"."account_id" = ? ' +
      'and "l"."name" = ?',
    [kind, accountId, name],
  )) as LeaseRow | undefined;
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
  const self = (await firstRow(db, 'select "state" from "nodes" where "id" = ?', [o.node])) as
    { state: string } | undefined;
  const draining = self?.state === 'draining';
  for (let attempt = 0; attempt < 3; attempt++) {
    if (draining) {
      const elsewhere = await inServiceNode(db, o.node, o.staleBefore);
      const held = await readLease(db, o.kind, o.accountId, o.name);
      if (!held && elsewhere) return elsewhere;
    }
    await runSql(
      db,
      'insert into "room_leases" ("kind", "account_id", "name", "node_id", "taken_at") values (?, ?, ?, ?, ?) ' +
        'on conflict ("kind", "account_id", "name") do nothing',
      [o.kind, o.accountId, o.name, o.node, o.now],
      'room_leases',
    );
    const lease = await readLease(db, o.kind, o.accountId, o.name);
    if (!lease) continue; // released between the insert and the read
    if (lease.node_id === o.node) return { nodeId: o.node, sipAddress: o.sipAddress };
    const inService =
      (lease.state === 'up' || lease.state === 'draining') &&
      lease.heartbeat_at !== null &&
      lease.heartbeat_at >= o.staleBefore;
    if (inService && lease.sip_address) return { nodeId: lease.node_id, sipAddress: lease.sip_address };
    await runSql(
      db,
      'update "room_leases" set "node_id" = ?, "taken_at" = ? where "kind" = ? and "account_id" = ? and "name" = ? ' +
        'and "node_id" = ?',
      [o.node, o.now, o.kind, o.accountId, o.name, lease.node_id],
      'room_leases',
    );
  }
  throw new Error(`room lease ${o.kind} ${o.name}: no holder after three attempts`);
}

/** The node up (not draining), heard from since `staleBefore`, other than `not`, with the fewest live calls. */
async function inServiceNode(db: Db, not: string, staleBefore: string): Promise<RoomHolder | undefined> {
  const n = (await firstRow(
    db,
    'select "id", "sip_address" from "nodes" where "state" = ? and not "id" = ? and "heartbeat_at" >= ? ' +
      'order by "live_calls", "id" limit 1',
    ['up', not, staleBefore],
  )) as { id: string; sip_address: string } | undefined;
  return n && { nodeId: n.id, sipAddress: n.sip_address };
}

/** The room ended on `node`: its lease is free (a lease another node took since is left alone). */
export async function releaseRoomLease(
  db: Db,
  o: { kind: RoomKind; accountId: string; name: string; node: string },
): Promise<void> {
  await runSql(
    db,
    'delete from "room_leases" where "kind" = ? and "account_id" = ? and "name" = ? and "node_id" = ?',
    [o.kind, o.accountId, o.name, o.node],
    'room_leases',
  );
}

/** Every lease `node` holds is freed: it is gone (a survivor's takeover) or starting again with no rooms. */
export async function releaseNodeLeases(db: Db, node: string): Promise<number> {
  return runSqlCount(db, 'delete from "room_leases" where "node_id" = ?', [node], 'room_leases');
}

/**
 * A secret every node sharing the store knows, for one purpose (nodes signing their legs to each other, the server
 * secret): made by the first node that asks (from `proposed` when given), read by the others. The store is what the
 * nodes trust already.
 */
export async function nodeSecret(db: Db, purpose: string, proposed?: string): Promise<string> {
  const secret = proposed ?? randomBytes(32).toString('base64url');
  await runSql(
    db,
    'insert into "node_secrets" ("purpose", "secret", "created_at") values (?, ?, ?) on conflict ("purpose") do nothing',
    [purpose, secret, new Date().toISOString()],
    'node_secrets',
  );
  const row = (await firstRow(db, 'select "secret" from "node_secrets" where "purpose" = ?', [purpose])) as {
    secret: string;
  };
  return row.secret;
}
