import { randomUUID } from 'node:crypto';
import { EventCodes, ReasonCodes, type EventPublisher } from '../../events/index.js';
import { SipError, type Dialog, type Responder, type SipRequest } from '../../sip/stack/index.js';
import type { CallRow, RoomHolder } from '../../store/index.js';
import type { ConferenceNoun, DialRecordMode, DialResult } from '../../verbs/index.js';
import { CALLER_LEG } from '../call-media.js';
import type { LiveCall } from '../live-call.js';
import { LEG_ANSWER_MS, inviteHolder, watchNode, type ConferenceLegAsk, type NodeLegBase } from '../node-leg.js';
import type { ParticipantPort } from './conference-room.js';
import type { Conferences } from './conferences.js';
import { joinConference } from './join.js';
import { conferenceCallOf } from './live-participant.js';

/** The caller's media tag towards the holder's leg (the tag a Dial's second leg has). */
const ROOM_LEG = 'B';

/** What a conference leg between nodes needs of the switch, on either side (calls/node-leg.ts has the rest). */
export interface NodeLegDeps extends NodeLegBase {
  events: EventPublisher;
  conferences: Conferences;
  /** What a remote caller's conference recording needs (live-participant.ts). */
  keep: Parameters<typeof conferenceCallOf>[1];
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
    const r = await joinRemote(d, call, holder, { noun, record: dial.record, timeLimit: dial.timeLimit }, dial);
    if (r !== 'moved') return r;
  }
  return { status: 'failed', durationSeconds: 0 };
}

/** The caller's side of a leg to the node holding its room: bridged until either side ends it or that node dies. */
async function joinRemote(
  d: NodeLegDeps,
  call: LiveCall,
  holder: RoomHolder,
  ask: ConferenceLegAsk,
  dial: { signal: AbortSignal; endsCall?: boolean },
): Promise<DialResult | 'moved'> {
  const row = call.row;
  const failed: DialResult = { status: 'failed', durationSeconds: 0 };
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
    const { noun, record, timeLimit } = ask;
    dialog = await inviteHolder(
      d,
      holder,
      row,
      { kind: 'conference', noun, record, timeLimit },
      { sdp, signal: ring.signal, user: 'conference' },
    );
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
    const stopWatching = watchNode(d.rooms, holder.nodeId, () => {
      d.log.warn({ call: row.sid, node: holder.nodeId }, 'conference: the node holding the room is gone');
      holderGone = true;
      done();
    });
    function done() {
      stopWatching();
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
 * The holder's side of a conference leg, once its signature was checked (calls/node-leg.ts, acceptNodeLeg): into a
 * room this node holds (410 otherwise, so the sender asks the store again). Its media is answered by this node's
 * engine, and the caller is a participant like any other: listed, muted and kicked through the API here, its
 * conference events on its own call. The stay ends with a BYE from either side, or when the sending node is out of
 * service.
 */
export async function serveConferenceLeg(
  d: NodeLegDeps,
  join: ConferenceLegAsk & { accountId: string },
  row: CallRow,
  req: SipRequest,
  srv: Responder,
  fromNode: string,
): Promise<void> {
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
  const left = new AbortController();
  // Ended by this node stopping: the sending node is told with a BYE.
  let stopping = false;
  d.legs.set(legId, () => {
    stopping = true;
    left.abort();
  });
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
    const stopWatching = watchNode(d.rooms, fromNode, () => left.abort());
    try {
      const call = conferenceCallOf({ life }, d.keep);
      await joinConference(d.conferences, call, join.noun, { ...join, signal: left.signal }, port);
    } finally {
      stopWatching();
    }
  } catch (err) {
    d.log.warn({ err, node: fromNode, call: row.sid }, 'a leg from another node ended with an error');
    if (!srv.finalResponse) srv.send(500, 'Server Internal Error');
  } finally {
    d.legs.delete(legId);
    if (dialog && (stopping || !left.signal.aborted)) void dialog.bye().catch(() => undefined);
    await d.media.deleteSession(legId).catch(() => undefined);
  }
}
