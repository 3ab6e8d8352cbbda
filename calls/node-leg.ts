import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Logger } from '../config/index.js';
import type { Clock } from '../kit/index.js';
import type { MediaService } from '../media/index.js';
import { NODE_LEG_HEADER, type SipApplication } from '../sip/index.js';
import type { Dialog, Responder, SipRequest } from '../sip/stack/index.js';
import {
  findCallAnyAccount,
  findNode,
  nodeSecret,
  nowIso,
  releaseRoomLease,
  takeRoomLease,
  type CallRow,
  type Db,
  type RoomHolder,
  type RoomKind,
} from '../store/index.js';
import type { ConferenceNoun, DialRecordMode } from '../verbs/index.js';
import type { CallLifecycle } from './call-lifecycle.js';

/** The join a leg between nodes asks for (base64url JSON), and its signature by the sending node. */
const JOIN_HEADER = 'X-Simu-Room-Join';
const SIGNATURE_HEADER = 'X-Simu-Node-Signature';
/** A signed join older than this is refused (a copy replayed later joins nobody). */
const SIGNATURE_MAX_AGE_MS = 30_000;
/** How long the holder may take to answer a leg; a node that does not is treated as gone for this caller. */
export const LEG_ANSWER_MS = 10_000;
/** How often each side of a leg between nodes looks whether the other node is still in service. */
const PEER_LOOK_MS = 2000;
/** The purpose of the shared secret nodes sign their legs with (store/room-leases.ts). */
const SECRET_PURPOSE = 'node-leg';

/** A caller of another node joining a conference held here (a join without `kind` is one: older nodes send it). */
export interface ConferenceLegAsk {
  kind?: 'conference';
  noun: ConferenceNoun;
  record?: DialRecordMode;
  timeLimit?: number;
}

/** A call of another node taking part in a queue held here: waiting in it, or taking its front caller. */
export type QueueLegAsk =
  | { kind: 'queue'; role: 'caller'; name: string; maxSize: number }
  | { kind: 'queue'; role: 'agent'; name: string; timeoutMs: number; timeLimitSeconds: number };

export type NodeLegAsk = ConferenceLegAsk | QueueLegAsk;

/** What a call of another node brings to a room held here, as signed. */
export type NodeLegJoin = NodeLegAsk & {
  /** The call (its row names the node holding it). */
  callId: string;
  accountId: string;
  /** When the sending node signed it (ms since the epoch). */
  at: number;
  /** Unique per join: a copy of a signed join replayed within its age is refused. */
  nonce: string;
};

export interface NodeRoomsDeps {
  db: Db;
  /** This node's id and the SIP address other nodes reach it at (its row in `nodes`). */
  nodeId: string;
  sipAddress: string;
  /** A node silent this long is out of service (config node.goneAfterSeconds). */
  goneAfterMs: number;
  clock: Pick<Clock, 'now'>;
  log: Logger;
}

/**
 * Rooms (conferences, queues) when nodes share a PostgreSQL store: one node holds each live room, by a lease in the
 * store (store/room-leases.ts); a call arriving on another node reaches it by a SIP leg between the nodes, signed
 * with a secret the nodes share through the store, so nobody outside the cluster can join a room that way.
 */
export class NodeRooms {
  readonly d: NodeRoomsDeps;
  #secret: Promise<Buffer> | undefined;
  readonly #turns = new Map<string, Promise<void>>();
  /** Nonces of the joins taken within the last SIGNATURE_MAX_AGE_MS, with when each may be forgotten. */
  readonly #nonces = new Map<string, number>();

  constructor(d: NodeRoomsDeps) {
    this.d = d;
  }

  get nodeId(): string {
    return this.d.nodeId;
  }

  /** The node holding the account's room `name`: this one when it was free or its holder is out of service. */
  holder(kind: RoomKind, accountId: string, name: string): Promise<RoomHolder> {
    return this.#inTurn(kind, accountId, name, () => {
      const now = this.d.clock.now();
      return takeRoomLease(this.d.db, {
        kind,
        accountId,
        name,
        node: this.d.nodeId,
        sipAddress: this.d.sipAddress,
        staleBefore: nowIso(new Date(now - this.d.goneAfterMs)),
        now: nowIso(new Date(now)),
      });
    });
  }

  /**
   * A room was made here: its lease is taken again after any release still on its way (the room before it, of the
   * same name, may have ended between this node's look at the lease and the new room). A lease another node holds
   * meanwhile is logged: two rooms of one name until one of them ends.
   */
  made(kind: RoomKind, accountId: string, name: string): void {
    void this.holder(kind, accountId, name).then(
      (h) => {
        if (h.nodeId !== this.d.nodeId)
          this.d.log.warn({ room: name, kind, holder: h.nodeId }, 'a room of this name is held elsewhere too');
      },
      (err: unknown) => this.d.log.warn({ err, room: name, kind }, 'room lease not taken'),
    );
  }

  /** The room ended here: the next caller, on any node, takes it anew. */
  release(kind: RoomKind, accountId: string, name: string): void {
    void this.#inTurn(kind, accountId, name, () =>
      releaseRoomLease(this.d.db, { kind, accountId, name, node: this.d.nodeId }),
    ).catch((err: unknown) =>
      this.d.log.warn({ err, room: name, kind }, 'room lease not released: it lapses when this node stops'),
    );
  }

  /** Lease reads and writes of one room run on this node one after another, in the order asked. */
  #inTurn<T>(kind: RoomKind, accountId: string, name: string, fn: () => Promise<T>): Promise<T> {
    const key = `${kind}\u0000${accountId}\u0000${name}`;
    const run = (this.#turns.get(key) ?? Promise.resolve()).then(fn, fn);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.#turns.set(key, settled);
    void settled.then(() => {
      if (this.#turns.get(key) === settled) this.#turns.delete(key);
    });
    return run;
  }

  /** Whether `nodeId` is in service: up or draining, its heartbeat fresh. */
  async inService(nodeId: string): Promise<boolean> {
    const n = await findNode(this.d.db, nodeId);
    if (!n || (n.state !== 'up' && n.state !== 'draining')) return false;
    return n.heartbeat_at >= nowIso(new Date(this.d.clock.now() - this.d.goneAfterMs));
  }

  /** True the first time a join's nonce is seen within its age; a replayed copy is false. */
  firstUse(nonce: string): boolean {
    const now = this.d.clock.now();
    for (const [n, until] of this.#nonces) {
      if (until > now) break;
      this.#nonces.delete(n);
    }
    if (this.#nonces.has(nonce)) return false;
    this.#nonces.set(nonce, now + 2 * SIGNATURE_MAX_AGE_MS);
    return true;
  }

  async sign(fromNode: string, payload: string): Promise<string> {
    this.#secret ??= nodeSecret(this.d.db, SECRET_PURPOSE).then((s) => Buffer.from(s));
    const key = await this.#secret.catch((err: unknown) => {
      this.#secret = undefined;
      throw err;
    });
    return createHmac('sha256', key).update(`${fromNode}\n${payload}`).digest('base64url');
  }

  async verify(fromNode: string, payload: string, signature: string): Promise<boolean> {
    const want = Buffer.from(await this.sign(fromNode, payload));
    const got = Buffer.from(signature);
    return got.length === want.length && timingSafeEqual(got, want);
  }
}

/** What a leg between nodes needs of the switch, on either side, whatever the room. */
export interface NodeLegBase {
  db: Db;
  log: Logger;
  media: MediaService;
  sip: SipApplication;
  rooms: NodeRooms;
  /** The one way a call's lifecycle is built (calls/call-services.ts). */
  lifecycle: (row: CallRow) => CallLifecycle;
  /**
   * Each leg from another node while it lasts, with what ends it with a BYE (this node stopping). It counts as this
   * node's live call; drain waits for it.
   */
  legs: Map<string, () => void>;
}

/**
 * The sending side: INVITEs the node holding the room with this node's id and the join, signed and dated.
 * Resolves with the leg's dialog once answered; rejects as createUAC does (SipError with the holder's status).
 */
export async function inviteHolder(
  d: Pick<NodeLegBase, 'rooms' | 'sip'>,
  holder: RoomHolder,
  call: CallRow,
  ask: NodeLegAsk,
  o: { sdp: string; signal: AbortSignal; user: string },
): Promise<Dialog> {
  const join: NodeLegJoin = {
    ...ask,
    callId: call.id,
    accountId: call.account_id,
    at: d.rooms.d.clock.now(),
    nonce: randomUUID(),
  };
  const payload = Buffer.from(JSON.stringify(join)).toString('base64url');
  return d.sip.ua.createUAC(`sip:${o.user}@${holder.sipAddress}`, {
    localSdp: o.sdp,
    from: `<sip:${encodeURIComponent(call.from_number)}@${d.rooms.d.sipAddress}>`,
    headers: {
      [NODE_LEG_HEADER]: d.rooms.nodeId,
      [JOIN_HEADER]: payload,
      [SIGNATURE_HEADER]: await d.rooms.sign(d.rooms.nodeId, payload),
    },
    signal: o.signal,
  });
}

/**
 * The holding side: a leg from another node (NODE_LEG_HEADER) is taken only with a valid, fresh signature seen
 * once, for a call of the account it names. Answers the join and the call's row, or undefined once the INVITE has
 * been refused (403 forged, stale or replayed; 400 unreadable; 404 no such call).
 */
export async function acceptNodeLeg(
  d: Pick<NodeLegBase, 'rooms' | 'db' | 'log'>,
  req: SipRequest,
  srv: Responder,
  fromNode: string,
): Promise<{ join: NodeLegJoin; row: CallRow } | undefined> {
  const payload = req.headers.get(JOIN_HEADER);
  const signature = req.headers.get(SIGNATURE_HEADER);
  if (!payload || !signature || !(await d.rooms.verify(fromNode, payload, signature))) {
    d.log.warn({ node: fromNode, source: req.source?.address }, 'a leg claiming to come from a node was refused');
    return void srv.send(403, 'Forbidden');
  }
  let join: NodeLegJoin;
  try {
    join = JSON.parse(Buffer.from(payload, 'base64url').toString()) as NodeLegJoin;
  } catch {
    return void srv.send(400, 'Bad Request');
  }
  if (Math.abs(d.rooms.d.clock.now() - join.at) > SIGNATURE_MAX_AGE_MS) return void srv.send(403, 'Forbidden');
  if (typeof join.nonce !== 'string' || !d.rooms.firstUse(join.nonce)) {
    d.log.warn({ node: fromNode, source: req.source?.address }, 'a replayed leg between nodes was refused');
    return void srv.send(403, 'Forbidden');
  }
  const row = await findCallAnyAccount(d.db, join.callId);
  if (!row || row.account_id !== join.accountId) return void srv.send(404, 'Not Found');
  return { join, row };
}

/**
 * Looks every PEER_LOOK_MS whether `nodeId` is still in service and calls `gone` once when it is not (a store out
 * of reach changes nothing). Answers the function that stops looking.
 */
export function watchNode(rooms: NodeRooms, nodeId: string, gone: () => void): () => void {
  const look = setInterval(() => {
    void rooms.inService(nodeId).then(
      (up) => {
        if (up) return;
        clearInterval(look);
        gone();
      },
      () => undefined,
    );
  }, PEER_LOOK_MS);
  return () => clearInterval(look);
}
