import { randomUUID } from 'node:crypto';
import { EventCodes } from '../../events/index.js';
import type { LegAudioPort } from '../../media/index.js';
import { SipError, type Dialog, type Responder, type SipRequest } from '../../sip/stack/index.js';
import type { CallRow, RoomHolder } from '../../store/index.js';
import type { DialOptions, DialResult, QueueOutcome, QueueResult, QueueTicket } from '../../verbs/index.js';
import type { CallLifecycle } from '../call-lifecycle.js';
import { CALLER_LEG } from '../call-media.js';
import { LEG_ANSWER_MS, inviteHolder, watchNode, type NodeLegBase, type QueueLegAsk } from '../node-leg.js';
import { bridgeAudio } from './queue-bridge.js';
import type { QueueCall, QueueRegistry } from './queue-registry.js';

/** Messages the holder sends a waiting caller's node over their leg (SIP INFO bodies). */
const QUEUE_INFO_TYPE = 'application/x-simu-queue+json';
/** The result a caller's node gives when it ends the leg (a BYE header): how the caller left the queue. */
const RESULT_HEADER = 'X-Simu-Queue-Result';
/** How often the holder looks whether a remote caller's place (position, size, average) changed. */
const STATE_LOOK_MS = 500;
/** The longest a remote caller's idea of the queue's average wait (its waitUrl's AvgQueueTime) is left unrefreshed. */
const AVERAGE_TOLD_MS = 10_000;
/** How long a caller's node waits for the holder's first word on the caller's place. */
const FIRST_STATE_MS = 3000;
const RESULTS: readonly QueueResult[] = [
  'bridged',
  'hangup',
  'redirected',
  'leave',
  'queue-full',
  'error',
  'system-shutdown',
];

interface QueuePlace {
  position: number;
  size: number;
  averageWaitSeconds: number;
}

/** What the holder tells a caller's node: its place, that an agent took it, how it left. */
type QueueInfo = { state: QueuePlace } | { bridged: { queueTime: number } } | { left: QueueOutcome };

export interface QueueNodesDeps extends NodeLegBase {
  queues: QueueRegistry;
}

/** A call's side of the queues, as call-queueing.ts sees it: its lifecycle and its audio at our IVR end. */
export interface QueueingCall {
  life: CallLifecycle;
  port: () => LegAudioPort;
}

/**
 * Queues when nodes share a PostgreSQL store: each live queue is held by one node (a `queue` lease, as a
 * conference's). A call of another node takes part through a leg to the holder (calls/node-leg.ts, signed as a
 * conference leg): a caller waits there in the holder's queue, in one FIFO order with the holder's own callers,
 * while its own node plays the hold audio or runs the waitUrl (the holder tells it its place); an agent's leg is
 * answered when the holder gives it the front caller. Either call stays billed by its own node, once.
 */
export class QueueNodes {
  readonly d: QueueNodesDeps;

  constructor(d: QueueNodesDeps) {
    this.d = d;
  }

  /** <Enqueue>: in this node's queue when it holds it (or takes it), else in the holder's through a leg. */
  async join(call: QueueingCall, name: string, maxSize: number, local: () => QueueTicket): Promise<QueueTicket> {
    const row = call.life.row;
    for (let attempt = 0; attempt < 3; attempt++) {
      let holder: RoomHolder;
      try {
        holder = await this.d.rooms.holder('queue', row.account_id, name);
      } catch (err) {
        this.d.log.warn({ err, call: row.sid }, 'queue: the lease could not be read; queueing here');
        return local();
      }
      if (holder.nodeId === this.d.rooms.nodeId) return local();
      const t = await this.#joinRemote(call, holder, name, maxSize);
      if (t !== 'moved') return t;
    }
    return settledTicket({ result: 'error', queueTimeSeconds: 0 });
  }

  /** <Dial><Queue>: from this node's queue when it holds it (or takes it), else from the holder's through a leg. */
  async dial(call: QueueingCall, name: string, options: DialOptions, local: () => Promise<DialResult>) {
    const row = call.life.row;
    for (let attempt = 0; attempt < 3 && !options.signal.aborted; attempt++) {
      let holder: RoomHolder;
      try {
        holder = await this.d.rooms.holder('queue', row.account_id, name);
      } catch (err) {
        this.d.log.warn({ err, call: row.sid }, 'queue: the lease could not be read; dialling the queue here');
        return local();
      }
      if (holder.nodeId === this.d.rooms.nodeId) return local();
      const r = await this.#dialRemote(call, holder, name, options);
      if (r !== 'moved') return r;
    }
    return { status: 'failed', durationSeconds: 0 } satisfies DialResult;
  }

  /**
   * A leg of this node's own (IVR to IVR) to the holder: the call's media stays where it is, so the verbs go on
   * playing to it, and its audio is joined to the leg's in software when the two must hear each other.
   */
  async #leg(
    call: QueueingCall,
    holder: RoomHolder,
    ask: QueueLegAsk,
    signal: AbortSignal,
  ): Promise<{ legId: string; dialog: Dialog } | { refused: number }> {
    const row = call.life.row;
    const legId = `${row.id}.queue.${randomUUID()}`;
    try {
      const sdp = await this.d.media.offerIvr(legId, CALLER_LEG, { calleeSide: { profile: 'rtp' } });
      const dialog = await inviteHolder(this.d, holder, row, ask, { sdp, signal, user: 'queue' });
      try {
        await this.d.media.completeIvr(legId, CALLER_LEG, dialog.remoteSdp ?? '');
      } catch (err) {
        void dialog.bye().catch(() => undefined);
        throw err;
      }
      return { legId, dialog };
    } catch (err) {
      await this.d.media.deleteSession(legId).catch(() => undefined);
      if (err instanceof SipError) return { refused: err.status };
      if (!signal.aborted)
        this.d.log.warn({ err, call: row.sid, node: holder.nodeId }, 'queue: no leg to the node holding the queue');
      return { refused: 0 };
    }
  }

  async #joinRemote(
    call: QueueingCall,
    holder: RoomHolder,
    name: string,
    maxSize: number,
  ): Promise<QueueTicket | 'moved'> {
    const leg = await this.#leg(
      call,
      holder,
      { kind: 'queue', role: 'caller', name, maxSize },
      AbortSignal.timeout(LEG_ANSWER_MS),
    );
    if ('refused' in leg) {
      if (leg.refused === 410) return 'moved'; // the queue ended there, or moved: ask the store again
      return settledTicket({ result: leg.refused === 486 ? 'queue-full' : 'error', queueTimeSeconds: 0 });
    }
    const ticket = new RemoteTicket(this.d, call, name, holder, leg.legId, leg.dialog);
    await ticket.placed;
    return ticket;
  }

  async #dialRemote(
    call: QueueingCall,
    holder: RoomHolder,
    name: string,
    options: DialOptions,
  ): Promise<DialResult | 'moved'> {
    let mine: LegAudioPort;
    try {
      mine = call.port();
    } catch {
      return { status: 'failed', durationSeconds: 0 };
    }
    const ask: QueueLegAsk = {
      kind: 'queue',
      role: 'agent',
      name,
      timeoutMs: options.timeout * 1000,
      timeLimitSeconds: options.timeLimit,
    };
    // The holder answers once it has a caller for this agent, or refuses 480 when none came within the timeout.
    const ring = AbortSignal.any([options.signal, AbortSignal.timeout(LEG_ANSWER_MS + options.timeout * 1000)]);
    const leg = await this.#leg(call, holder, ask, ring);
    if ('refused' in leg) {
      if (leg.refused === 410) return 'moved';
      if (leg.refused === 480 || options.signal.aborted) return { status: 'no-answer', durationSeconds: 0 };
      return { status: 'failed', durationSeconds: 0 };
    }
    const { legId, dialog } = leg;
    const started = Date.now();
    const over = new AbortController();
    let remoteBye = false;
    dialog.once('bye', () => {
      remoteBye = true;
      over.abort();
    });
    dialog.once('destroy', () => over.abort());
    const stopWatching = watchNode(this.d.rooms, holder.nodeId, () => {
      this.d.log.warn({ call: call.life.row.sid, node: holder.nodeId }, 'queue: the node holding the queue is gone');
      remoteBye = true; // nobody there to say goodbye to
      over.abort();
    });
    try {
      await bridgeAudio(
        mine,
        this.d.media.audioPort(legId, CALLER_LEG),
        AbortSignal.any([over.signal, options.signal]),
      );
    } catch (err) {
      this.d.log.warn({ err, call: call.life.row.sid }, 'queue: the agent could not be joined to the leg');
    } finally {
      stopWatching();
      if (!remoteBye) void dialog.bye().catch(() => undefined);
      await this.d.media.deleteSession(legId).catch(() => undefined);
    }
    return { status: 'completed', durationSeconds: Math.round((Date.now() - started) / 1000) };
  }

  /**
   * The holder's side of a queue leg, once its signature was checked (calls/node-leg.ts, acceptNodeLeg): for a queue
   * this node holds (410 otherwise, so the sender asks the store again). A caller is answered and joins the queue
   * here (486 when full); an agent's leg rings until this node gives it the front caller, then is answered and
   * bridged to that caller (480 when none came within its timeout).
   */
  async serve(ask: QueueLegAsk, row: CallRow, req: SipRequest, srv: Responder, fromNode: string): Promise<void> {
    const holder = await this.d.rooms.holder('queue', row.account_id, ask.name);
    if (holder.nodeId !== this.d.rooms.nodeId) return void srv.send(410, 'Gone');
    if (ask.role === 'caller' && !this.d.queues.hasRoom(row.account_id, ask.name, ask.maxSize))
      return void srv.send(486, 'Busy Here');
    const legId = `${row.id}.${randomUUID()}`;
    const left = new AbortController();
    let leaving: QueueResult = 'hangup';
    // This node stopping ends the leg: a waiting caller leaves with system-shutdown, told to the sending node, then
    // the leg's BYE (below, as for any end but the sending node's own BYE).
    let stopping = false;
    this.d.legs.set(legId, () => {
      stopping = true;
      leaving = 'system-shutdown';
      left.abort();
    });
    const stopWatching = watchNode(this.d.rooms, fromNode, () => left.abort());
    let dialog: Dialog | undefined;
    let remoteBye = false;
    try {
      const localSdp = await this.d.media.answerIvr(legId, CALLER_LEG, req.body.toString());
      const answer = async (): Promise<Dialog> => {
        dialog = await this.d.sip.ua.createUAS(req, {
          localSdp,
          onConfirmed: (dl) => {
            dl.once('destroy', () => left.abort());
          },
        });
        dialog.once('bye', (bye: SipRequest) => {
          remoteBye = true;
          const said = bye.headers.get(RESULT_HEADER) as QueueResult | undefined;
          leaving = said !== undefined && RESULTS.includes(said) ? said : 'hangup';
          left.abort();
        });
        return dialog;
      };
      if (ask.role === 'caller')
        await this.#serveCaller(
          row,
          ask,
          legId,
          answer,
          left.signal,
          () => leaving,
          () => stopping,
        );
      else await this.#serveAgent(row, ask, legId, srv, answer, left.signal);
    } catch (err) {
      this.d.log.warn({ err, node: fromNode, call: row.sid }, 'a queue leg from another node ended with an error');
      if (!srv.finalResponse) srv.send(500, 'Server Internal Error');
    } finally {
      stopWatching();
      this.d.legs.delete(legId);
      if (dialog && !remoteBye) void (dialog as Dialog).bye().catch(() => undefined);
      if (!srv.finalResponse) srv.send(480, 'Temporarily Unavailable');
      await this.d.media.deleteSession(legId).catch(() => undefined);
    }
  }

  async #serveCaller(
    row: CallRow,
    ask: Extract<QueueLegAsk, { role: 'caller' }>,
    legId: string,
    answer: () => Promise<Dialog>,
    left: AbortSignal,
    leaving: () => QueueResult,
    stopping: () => boolean,
  ): Promise<void> {
    const dialog = await answer();
    const tell = (info: QueueInfo) =>
      dialog
        .request('INFO', { body: JSON.stringify(info), contentType: QUEUE_INFO_TYPE })
        .then(() => undefined)
        .catch(() => undefined);
    const life = this.d.lifecycle(row);
    const call: QueueCall = {
      callId: row.id,
      callSid: row.sid,
      port: () => this.d.media.audioPort(legId, CALLER_LEG),
      emit: (code, data) => {
        void life.emit(code, data);
        if (code === EventCodes.queueBridged) void tell({ bridged: { queueTime: Number(data.queueTime) } });
      },
    };
    const ticket = this.d.queues.join(row.account_id, ask.name, call, ask.maxSize);
    let told = '';
    let toldAt = 0;
    const place = (): void => {
      if (ticket.holdOver.aborted) return;
      const state: QueuePlace = {
        position: ticket.position(),
        size: ticket.size(),
        averageWaitSeconds: ticket.averageWaitSeconds(),
      };
      // The average grows while anyone waits: it is told with each move, and at least every AVERAGE_TOLD_MS.
      const text = `${state.position}/${state.size}`;
      const now = Date.now();
      if (text === told && now - toldAt < AVERAGE_TOLD_MS) return;
      told = text;
      toldAt = now;
      void tell({ state });
    };
    place();
    const look = setInterval(place, STATE_LOOK_MS);
    const onLeft = (): void => ticket.leave(leaving());
    left.addEventListener('abort', onLeft, { once: true });
    try {
      const outcome = await ticket.outcome;
      // Ended by the sending node, it knows; by this node stopping, it is told before the BYE.
      if (!left.aborted || stopping()) await tell({ left: outcome });
    } finally {
      clearInterval(look);
      left.removeEventListener('abort', onLeft);
    }
  }

  async #serveAgent(
    row: CallRow,
    ask: Extract<QueueLegAsk, { role: 'agent' }>,
    legId: string,
    srv: Responder,
    answer: () => Promise<Dialog>,
    left: AbortSignal,
  ): Promise<void> {
    srv.send(180, 'Ringing');
    const canceled = AbortSignal.any([left, srv.signal]);
    const limit = AbortSignal.any([left, AbortSignal.timeout(ask.timeLimitSeconds * 1000)]);
    await this.d.queues.dequeueToAgent(
      row.account_id,
      ask.name,
      row.id,
      async (member, memberGone) => {
        if (canceled.aborted) return;
        let theirs: LegAudioPort;
        try {
          await answer();
          theirs = member.port();
        } catch (err) {
          this.d.log.info({ err, call: row.sid }, 'queue: the agent of another node left as a caller was taken');
          return;
        }
        await bridgeAudio(theirs, this.d.media.audioPort(legId, CALLER_LEG), AbortSignal.any([memberGone, limit]));
      },
      { timeoutMs: ask.timeoutMs, signal: canceled },
    );
  }
}

/** A ticket that has left already (refused, full, the holder unreachable). */
function settledTicket(outcome: QueueOutcome): QueueTicket {
  const over = new AbortController();
  over.abort();
  return {
    position: () => 0,
    size: () => 0,
    waitedSeconds: () => 0,
    averageWaitSeconds: () => 0,
    holdOver: over.signal,
    outcome: Promise.resolve(outcome),
    leave: () => undefined,
  };
}

/**
 * A caller of this node waiting in a queue another node holds: its place is what the holder last said; an agent
 * taking it joins its audio to the leg's; it leaves when the holder says how (then ends the leg), when the caller
 * leaves here (the leg ends with the result), or when the holder is out of service: QueueResult `system-shutdown`,
 * told here on the caller's call since the holder cannot tell it any more.
 */
export class RemoteTicket implements QueueTicket {
  readonly #hold = new AbortController();
  readonly #bridgeOver = new AbortController();
  readonly #joinedAt = Date.now();
  #place: QueuePlace = { position: 0, size: 0, averageWaitSeconds: 0 };
  #bridged: { queueTime: number } | undefined;
  #said: QueueOutcome | undefined;
  #settled = false;
  #settle!: (o: QueueOutcome) => void;
  readonly outcome: Promise<QueueOutcome>;
  /** Resolves once the holder first said the caller's place (or after FIRST_STATE_MS, or the leg ended). */
  readonly placed: Promise<void>;
  #placedNow!: () => void;

  constructor(
    readonly d: QueueNodesDeps,
    readonly call: QueueingCall,
    readonly name: string,
    readonly holder: RoomHolder,
    readonly legId: string,
    readonly dialog: Dialog,
  ) {
    this.outcome = new Promise((r) => (this.#settle = r));
    this.placed = new Promise((r) => {
      this.#placedNow = r;
      setTimeout(r, FIRST_STATE_MS).unref();
    });
    dialog.on('info', (req, srv) => {
      srv.send(200);
      if (req.headers.get('content-type') !== QUEUE_INFO_TYPE) return;
      try {
        this.#heard(JSON.parse(req.text) as QueueInfo);
      } catch (err) {
        d.log.warn({ err, call: call.life.row.sid }, 'queue: an unreadable word from the node holding the queue');
      }
    });
    dialog.once('destroy', () => this.#ended());
    const stopWatching = watchNode(d.rooms, holder.nodeId, () => this.#holderGone());
    void this.outcome.then(stopWatching);
  }

  position(): number {
    return this.#place.position;
  }

  size(): number {
    return this.#place.size;
  }

  waitedSeconds(): number {
    return (Date.now() - this.#joinedAt) / 1000;
  }

  averageWaitSeconds(): number {
    return this.#place.averageWaitSeconds;
  }

  get holdOver(): AbortSignal {
    return this.#hold.signal;
  }

  leave(result: QueueResult): void {
    if (this.#settled) return;
    // Bridged: the holder ends the bridge on the BYE and tells the agent; the caller's result is bridged.
    if (this.#bridged) return this.#finish({ result: 'bridged', queueTimeSeconds: this.#bridged.queueTime });
    this.#finish({ result, queueTimeSeconds: Math.round(this.waitedSeconds()) }, { [RESULT_HEADER]: result });
  }

  #heard(info: QueueInfo): void {
    if ('state' in info) {
      this.#place = info.state;
      this.#placedNow();
    } else if ('bridged' in info) {
      this.#bridged = info.bridged;
      this.#hold.abort();
      this.#placedNow();
      let mine: LegAudioPort;
      try {
        mine = this.call.port();
      } catch {
        return this.leave('hangup'); // the caller's audio is gone: the bridge has nobody on this side
      }
      void bridgeAudio(mine, this.d.media.audioPort(this.legId, CALLER_LEG), this.#bridgeOver.signal).catch(
        () => undefined,
      );
    } else if ('left' in info) {
      this.#said = info.left;
      // A caller who was not bridged leaves now; a bridged one when the holder ends the leg after the bridge.
      if (info.left.result !== 'bridged') this.#finish(info.left);
    }
  }

  /** The holder ended the leg: the caller left as it said, or after the bridge; without a word, an error. */
  #ended(): void {
    if (this.#settled) return;
    const o: QueueOutcome =
      this.#said ??
      (this.#bridged
        ? { result: 'bridged', queueTimeSeconds: this.#bridged.queueTime }
        : { result: 'error', queueTimeSeconds: Math.round(this.waitedSeconds()) });
    this.#finish(o);
  }

  #holderGone(): void {
    if (this.#settled) return;
    this.d.log.warn({ call: this.call.life.row.sid, node: this.holder.nodeId }, 'queue: the node holding it is gone');
    const o: QueueOutcome = this.#bridged
      ? { result: 'bridged', queueTimeSeconds: this.#bridged.queueTime }
      : { result: 'system-shutdown', queueTimeSeconds: Math.round(this.waitedSeconds()) };
    // The holder told the caller's joining; nobody else can tell its leaving.
    void this.call.life.emit(EventCodes.queueLeft, {
      queue: this.name,
      result: o.result,
      queueTime: o.queueTimeSeconds,
    });
    this.#finish(o);
  }

  /** Settled once; the leg is ended here unless the holder ended it (a gone holder's BYE is not waited for). */
  #finish(o: QueueOutcome, byeHeaders?: Record<string, string>): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#hold.abort();
    this.#bridgeOver.abort();
    this.#placedNow();
    if (this.dialog.state !== 'terminated') void this.dialog.bye(byeHeaders).catch(() => undefined);
    void this.d.media.deleteSession(this.legId).catch(() => undefined);
    this.#settle(o);
  }
}
