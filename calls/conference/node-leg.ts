import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Logger } from '../../config/index.js';
import { EventCodes, ReasonCodes, type EventPublisher } from '../../events/index.js';
import type { Clock } from '../../kit/index.js';
import type { MediaService } from '../../media/index.js';
import { NODE_LEG_HEADER, type SipApplication } from '../../sip/index.js';
import { SipError, type Dialog, type Responder, type SipRequest } from '../../sip/stack/index.js';
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
} from '../../store/index.js';
import type { ConferenceNoun, DialRecordMode, DialResult } from '../../verbs/index.js';
import { CALLER_LEG } from '../call-media.js';
import { CallLifecycle } from '../call-lifecycle.js';
import type { LiveCall } from '../live-call.js';
import type { ParticipantPort } from './conference-room.js';
import type { Conferences } from './conferences.js';
import { joinConference } from './join.js';
import { conferenceCallOf } from './live-participant.js';

/** The join a leg between nodes asks for (base64url JSON), and its signature by the sending node. */
const JOIN_HEADER = 'X-Simu-Room-Join';
const SIGNATURE_HEADER = 'X-Simu-Node-Signature';
/** A signed join older than this is refused (a copy replayed later joins nobody). */
const SIGNATURE_MAX_AGE_MS = 30_000;
/** How long the holder may take to answer a leg; a node that does not is treated as gone for this caller. */
const LEG_ANSWER_MS = 10_000;
/** How often each side of a leg between nodes looks whether the other node is still in service. */
const PEER_LOOK_MS = 2000;
/** The caller's media tag towards the holder's leg (the tag a Dial's second leg has). */
const ROOM_LEG = 'B';
/** The purpose of the shared secret nodes sign their legs with (store/room-leases.ts). */
const SECRET_PURPOSE = 'node-leg';

/** What a caller of another node brings to a room held here. */
interface NodeLegJoin {
  /** The caller's call (its row names the node holding it). */
  callId: string;
  accountId: string;
  noun: ConferenceNoun;
  record?: DialRecordMode;
  timeLimit?: number;
  /** When the sending node signed it (ms since the epoch). */
  at: number;
  /** Unique per join: a copy of a signed join replayed within its age is refused. */
  nonce: string;
}

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
 * store (store/room-leases.ts); a caller arriving on another node reaches it by a SIP leg between the nodes, signed
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
          this.d.log.warn({ room: name, holder: h.nodeId }, 'a room of this name is held elsewhere too');
      },
      (err: unknown) => this.d.log.warn({ err, room: name }, 'room lease not taken'),
    );
  }

  /** The room ended here: the next caller, on any node, takes it anew. */
  release(kind: RoomKind, accountId: string, name: string): void {
    void this.#inTurn(kind, accountId, name, () =>
      releaseRoomLease(this.d.db, { kind, accountId, name, node: this.d.nodeId }),
    ).catch((err: unknown) =>
      this.d.log.warn({ err, room: name }, 'room lease not released: it lapses when this node stops'),
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

/** What a leg between nodes needs of the switch, on either side. */
export interface NodeLegDeps {
  db: Db;
  log: Logger;
  media: MediaService;
  sip: SipApplication;
  events: EventPublisher;
  rooms: NodeRooms;
  conferences: Conferences;
  /** What a remote caller's conference recording needs (live-participant.ts). */
  keep: Parameters<typeof conferenceCallOf>[1];
  /** The one way a call's lifecycle is built (calls/call-services.ts). */
  lifecycle: (row: CallRow) => CallLifecycle;
  /** Told of each leg from another node while it lasts (it counts as this node's live call; drain waits for it). */
  legs: Set<string>;
}

/**
 * <Dial><Conference> on a node sharing a PostgreSQL store: the caller joins here when this node holds the room (or
 * takes it, the room being free), else through a leg to the node that holds it. A leg refused because the room
 * moved meanwhile asks the store again (three times at most).
 */
export async function dialConference(
  d: NodeLegDeps,
  call: LiveCall,
  noun: ConferenceNoun,
  dial: { signal: AbortSignal; record?: DialRecordMode; timeLimit?: number; endsCall?: boolean },
): Promise<DialResult> {
  const local = () => joinConference(d.conferences, conferenceCallOf(call, d.keep), noun, dial);
  for (let attempt = 0; attempt < 3 && !dial.signal.aborted; attempt++) {
    let holder: RoomHolder;
    try {
      holder = await d.rooms.holder('conference', call.row.account_id, noun.name);
    } catch (err) {
      // Without the store nobody can say where the room is: the caller meets whoever is in it here.
      d.log.warn({ err, call: call.row.sid }, 'conference: the room lease could not be read; joining here');
      return local();
    }
    if (holder.nodeId === d.rooms.nodeId) return local();
    const r = await joinRemote(d, call, holder, noun, dial);
    if (r !== 'moved') return r;
  }
  return { status: 'failed', durationSeconds: 0 };
}

/** The caller's side of a leg to the node holding its room: bridged until either side ends it or that node dies. */
async function joinRemote(
  d: NodeLegDeps,
  call: LiveCall,
  holder: RoomHolder,
  noun: ConferenceNoun,
  dial: { signal: AbortSignal; record?: DialRecordMode; timeLimit?: number; endsCall?: boolean },
): Promise<DialResult | 'moved'> {
  const row = call.row;
  const failed: DialResult = { status: 'failed', durationSeconds: 0 };
  const join: NodeLegJoin = {
    callId: row.id,
    accountId: row.account_id,
    noun,
    record: dial.record,
    timeLimit: dial.timeLimit,
    at: d.rooms.d.clock.now(),
    nonce: randomUUID(),
  };
  const payload = Buffer.from(JSON.stringify(join)).toString('base64url');
  let sdp: string;
  try {
    sdp = await d.media.offerFromIvr(row.id, CALLER_LEG, ROOM_LEG, { toSide: { profile: 'rtp' } });
  } catch (err) {
    d.log.warn({ err, call: row.sid }, 'conference: the caller media could not be offered to the room node');
    return failed;
  }
  const ring = new AbortController();
  const stopRinging = () => ring.abort();
  dial.signal.addEventListener('abort', stopRinging, { once: true });
  const timer = setTimeout(stopRinging, LEG_ANSWER_MS);
  let dialog: Dialog;
  try {
    dialog = await d.sip.ua.createUAC(`sip:conference@${holder.sipAddress}`, {
      localSdp: sdp,
      from: `<sip:${encodeURIComponent(row.from_number)}@${d.rooms.d.sipAddress}>`,
      headers: {
        [NODE_LEG_HEADER]: d.rooms.nodeId,
        [JOIN_HEADER]: payload,
        [SIGNATURE_HEADER]: await d.rooms.sign(d.rooms.nodeId, payload),
      },
      signal: ring.signal,
    });
  } catch (err) {
    await backToIvr(d, call, dial);
    // 410: the room is no longer held there (it ended, or the lease moved): ask the store again.
    if (err instanceof SipError && err.status === 410) return 'moved';
    d.log.warn(
      { err, call: row.sid, node: holder.nodeId },
      'conference: the node holding the room did not take the leg',
    );
    return failed;
  } finally {
    clearTimeout(timer);
    dial.signal.removeEventListener('abort', stopRinging);
  }
  try {
    await d.media.answer(row.id, CALLER_LEG, ROOM_LEG, dialog.remoteSdp ?? '');
  } catch (err) {
    d.log.warn({ err, call: row.sid }, "conference: the caller media could not be joined to the room node's");
    void dialog.bye().catch(() => undefined);
    await backToIvr(d, call, dial);
    return failed;
  }
  const joinedAt = Date.now();
  let remoteBye = false;
  let holderGone = false;
  await new Promise<void>((resolve) => {
    const look = setInterval(() => {
      void d.rooms.inService(holder.nodeId).then(
        (up) => {
          if (up) return;
          d.log.warn({ call: row.sid, node: holder.nodeId }, 'conference: the node holding the room is gone');
          holderGone = true;
          done();
        },
        () => undefined, // the store is out of reach: the leg stays as it is
      );
    }, PEER_LOOK_MS);
    function done() {
      clearInterval(look);
      dial.signal.removeEventListener('abort', done);
      resolve();
    }
    dialog.once('bye', () => {
      remoteBye = true;
      done();
    });
    dialog.once('destroy', done);
    dial.signal.addEventListener('abort', done, { once: true });
    call.onEnd(done);
  });
  // Not waited for: the caller's verbs go on at once (a gone node would keep a BYE waiting for 32 s).
  if (!remoteBye && !holderGone) void dialog.bye().catch(() => undefined);
  await backToIvr(d, call, dial);
  return { status: 'completed', durationSeconds: Math.round((Date.now() - joinedAt) / 1000) };
}

/** The caller is still up after its stay: its media goes back to the platform for the verbs that follow. */
async function backToIvr(d: NodeLegDeps, call: LiveCall, dial: { signal: AbortSignal; endsCall?: boolean }) {
  if (call.isEnding || !d.media.hasSession(call.id)) return;
  if (dial.endsCall === true && !dial.signal.aborted) return; // the call ends next: nothing will play to the caller
  try {
    await d.media.returnToIvr(call.id, CALLER_LEG);
  } catch (err) {
    d.log.warn({ err, call: call.row.sid }, 'conference: the caller could not be moved back to the IVR; hanging up');
    void call.end(ReasonCodes.normalHangup);
  }
}

/**
 * The holder's side: a leg from another node (NODE_LEG_HEADER) is taken only with a valid, fresh signature, for a
 * call of the account it names, into a room this node holds (410 otherwise, so the sender asks the store again).
 * Its media is answered by this node's engine, and the caller is a participant like any other: listed, muted and
 * kicked through the API here, its conference events on its own call. The stay ends with a BYE from either side,
 * or when the sending node is out of service.
 */
export async function serveNodeLeg(d: NodeLegDeps, req: SipRequest, srv: Responder, fromNode: string): Promise<void> {
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
  const holder = await d.rooms.holder('conference', join.accountId, join.noun.name);
  if (holder.nodeId !== d.rooms.nodeId) return void srv.send(410, 'Gone');
  const life = d.lifecycle(row);
  const full = d.conferences.existing(join.accountId, join.noun.name);
  if (full && full.size >= join.noun.maxParticipants) {
    // As for a caller of this node (join.ts): not joined, DIAL.0300 failed on its call; the leg is refused busy.
    await life.emit(EventCodes.dialCompleted, {
      DialCallStatus: 'failed',
      DialCallDuration: 0,
      reason: 'CONFERENCE_FULL',
      ...full.about(),
    });
    return void srv.send(486, 'Busy Here');
  }
  const legId = `${row.id}.${randomUUID()}`;
  d.legs.add(legId);
  const left = new AbortController();
  let dialog: Dialog | undefined;
  try {
    const local = await d.media.answerIvr(legId, CALLER_LEG, req.body.toString());
    await d.sip.ua.createUAS(req, {
      localSdp: local,
      onConfirmed: (dl) => {
        dialog = dl;
        dl.once('bye', () => left.abort());
        dl.once('destroy', () => left.abort());
      },
    });
    const port: ParticipantPort = d.media.audioPort(legId, CALLER_LEG);
    const look = setInterval(() => {
      void d.rooms.inService(fromNode).then(
        (up) => up || left.abort(),
        () => undefined,
      );
    }, PEER_LOOK_MS);
    try {
      const call = conferenceCallOf({ life }, d.keep);
      await joinConference(d.conferences, call, join.noun, { ...join, signal: left.signal }, port);
    } finally {
      clearInterval(look);
    }
  } catch (err) {
    d.log.warn({ err, node: fromNode, call: row.sid }, 'a leg from another node ended with an error');
    if (!srv.finalResponse) srv.send(500, 'Server Internal Error');
  } finally {
    d.legs.delete(legId);
    if (dialog && !left.signal.aborted) void dialog.bye().catch(() => undefined);
    await d.media.deleteSession(legId).catch(() => undefined);
  }
}
