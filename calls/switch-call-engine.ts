import type { Config } from '../config/index.js';
import { roomLogger } from '../config/index.js';
import type { Admission } from '../billing/index.js';
import { ReasonCodes, type EventPublisher } from '../events/index.js';
import { mediaStorageFor, type MediaService } from '../media/index.js';
import type { SipApplication } from '../sip/index.js';
import { findCallAnyAccount, isPostgres, LIVE_CALL_STATUSES, type CallRow, type Db } from '../store/index.js';
import type { CallControlOutcome, CallEngine, OriginateOptions } from './call-engine.js';
import { CallLifecycle } from './call-lifecycle.js';
import { CALLER_LEG, LiveCall, type CallBilling } from './live-call.js';
import { mediaOfCall } from './call-media.js';
import type { FlowServices } from './flows/flow-services.js';
import { hasLocator, type CallServices, type EndUserLocator } from './call-services.js';
import { runOriginate } from './flows/originate.js';
import { runInbound } from './flows/inbound.js';
import { runEndUserCall } from './flows/end-user.js';
import { CreditNotices, type CreditWarningNotice } from './prepaid/credit-notices.js';
import { LastGoodDocuments } from './prepaid/last-good-documents.js';
import { BridgedCall } from './bridged-call.js';
import { runDial } from './flows/dial-verb.js';
import { ChildLegs, type ChildLeg } from './child-leg.js';
import { CallSpeech } from './call-speech.js';
import { publishTrunkState } from './trunk-events.js';
import { CallTransfers } from './transfer/call-transfers.js';
import { UrlPolicy, systemClock } from '../kit/index.js';
import { QueueRegistry } from './queue/queue-registry.js';
import { queueEvents } from './queue/call-queueing.js';
import { VERB_REGISTRY, type InterpreterStart, type VerbRegistry } from '../verbs/index.js';
import {
  Conferences,
  conferenceCallOf,
  dialConference,
  joinConference,
  serveConferenceLeg,
  type NodeLegDeps,
} from './conference/index.js';
import { NodeRooms, acceptNodeLeg } from './node-leg.js';
import { QueueNodes } from './queue/node-queue.js';
import type { Responder, SipRequest } from '../sip/stack/index.js';
import { join } from 'node:path';

export interface CallEngineDeps {
  db: Db;
  config: Config;
  publisher: EventPublisher;
  media: MediaService;
  sip: SipApplication;
  admission: Admission;
  billing?: CallBilling;
  /** Closes a call the store shows live that this process does not hold (billing's reconcileCall). */
  reconcile?: (callId: string) => Promise<unknown>;
  /** Registered end-users' contacts (sip/location.ts); without it end-user calls are refused with 503. */
  locator?: EndUserLocator;
  /** Days a recording is kept before the retention job deletes its media. */
  recordingRetentionDays?: number;
}

/**
 * The switch's call engine: owns every live call of this process. The API hands it admitted calls (originate,
 * hangup); the SIP edge hands it INVITEs from carriers and end-users.
 */
export class SwitchCallEngine implements CallEngine {
  readonly #deps: CallEngineDeps;
  /** Built once here and handed down with every call (calls/call-services.ts, calls/flows/flow-services.ts). */
  readonly #services: FlowServices;
  readonly #live = new Map<string, LiveCall | BridgedCall>();
  /** Dial legs and transfers' new legs (a billing cut of a leg ends the call it is part of). */
  readonly #childLegs: ChildLegs;
  readonly #log = roomLogger('calls');
  /** The "one minute left" notice to a prepaid call's paying leg (calls/prepaid/credit-notices.ts). */
  readonly #creditNotices: CreditNotices;
  /** REFER from phones on bridges (calls/transfer/; docs/softphones.md, "Transfer"). */
  readonly #transfers: CallTransfers;
  /** Call queues of this process, in memory (calls/queue/; docs/api.md, Queues); on nodes, each held by one. */
  readonly queues = new QueueRegistry(systemClock, queueEvents, {
    onQueueMade: (accountId, name) => this.#nodeLegs?.rooms.made('queue', accountId, name),
    onQueueEnded: (accountId, name) => this.#nodeLegs?.rooms.release('queue', accountId, name),
  });
  /** Conferences of this process and the mixer clock (calls/conference/; docs/api.md, Conferences). */
  readonly conferences: Conferences;
  /**
   * On PostgreSQL (nodes sharing the store): where each conference and queue is held, and the legs between nodes
   * that join calls of other nodes to the rooms held here (node-leg.ts, conference/node-leg.ts,
   * queue/node-queue.ts). Undefined on SQLite: one node, every room here.
   */
  readonly #nodeLegs: NodeLegDeps | undefined;
  readonly #queueNodes: QueueNodes | undefined;
  /**
   * The classes that run each verb, read when a call's document starts: VERB_REGISTRY. Tests replace one with a
   * class that fails, to prove what a platform failure does to a call through the real switch.
   */
  verbRegistry: VerbRegistry = VERB_REGISTRY;
  #closed = false;

  constructor(deps: CallEngineDeps) {
    this.#deps = deps;
    const { allowPrivate, allowNetworks } = deps.config.webhooks;
    const lifecycle = (row: CallRow) => new CallLifecycle({ db: deps.db, events: deps.publisher, log: this.#log }, row);
    const nodeBase = isPostgres(deps.db)
      ? {
          db: deps.db,
          log: this.#log,
          media: deps.media,
          sip: deps.sip,
          lifecycle,
          legs: new Map<string, () => void>(),
          rooms: new NodeRooms({
            db: deps.db,
            nodeId: deps.config.node.id,
            sipAddress: `${deps.config.publicHost}:${deps.config.sip.port}`,
            goneAfterMs: deps.config.node.goneAfterSeconds * 1000,
            clock: systemClock,
            log: this.#log,
          }),
        }
      : undefined;
    this.#queueNodes = nodeBase && new QueueNodes({ ...nodeBase, queues: this.queues });
    const core = {
      db: deps.db,
      config: deps.config,
      log: this.#log,
      media: deps.media,
      sip: deps.sip,
      events: deps.publisher,
      admission: deps.admission,
      clock: systemClock,
      urlPolicy: new UrlPolicy({ allowPrivate, allow: allowNetworks ?? [] }),
      webhookTimeoutMs: deps.config.webhooks.timeoutMs,
      recordingRetentionDays: deps.recordingRetentionDays ?? 90,
      billing: deps.billing,
      locator: deps.locator,
      assetStorage: mediaStorageFor(deps.config),
      speech: new CallSpeech(deps.media),
      queues: this.queues,
      queueNodes: this.#queueNodes,
      lastGood: new LastGoodDocuments({
        db: deps.db,
        maxAgeSeconds: deps.config.prepaid.lastGoodMaxAgeSeconds,
        clock: systemClock,
        log: this.#log,
      }),
      verbRegistry: () => this.verbRegistry,
      lifecycle,
    } satisfies CallServices;
    this.#creditNotices = new CreditNotices({ media: deps.media, log: this.#log });
    this.conferences = new Conferences({
      log: this.#log,
      clock: systemClock,
      port: (callId) => deps.media.audioPort(callId, CALLER_LEG),
      playUrl: async (callId, url, signal) => void (await deps.media.playUrl(callId, CALLER_LEG, url, { signal })),
      recordingsDir: join(deps.config.dataDir, 'recordings'),
      onRoomMade: (accountId, name) => this.#nodeLegs?.rooms.made('conference', accountId, name),
      onRoomEnded: (accountId, name) => this.#nodeLegs?.rooms.release('conference', accountId, name),
    });
    this.#nodeLegs = nodeBase && {
      ...nodeBase,
      events: deps.publisher,
      conferences: this.conferences,
      keep: core,
    };
    this.#childLegs = new ChildLegs(core);
    this.#transfers = new CallTransfers(
      core,
      { bridges: () => [...this.#live.values()].filter((c): c is BridgedCall => c instanceof BridgedCall) },
      this.#childLegs,
    );
    this.#services = {
      ...core,
      trackIvr: (row) => this.#track(row),
      trackBridge: (row, opts) => this.#trackBridge(row, opts),
      openChildLeg: (parent, from, to) => this.#openChildLeg(parent, from, to),
      dial: (c, target, options) =>
        target.kind === 'conference'
          ? this.#nodeLegs
            ? dialConference(this.#nodeLegs, c, target.conference, options)
            : joinConference(this.conferences, conferenceCallOf(c, core), target.conference, options)
          : runDial(this.#services, c, target, options),
      transfers: this.#transfers,
    };
    // A caller's keys (RFC 4733 from rtpengine's log and read by our IVR endpoint, tones it heard) reach its call
    // (Gather, Record's finishOnKey; one press seen twice counts once); digits of bridged legs are not used. SIP
    // INFO keys arrive on the dialog (LiveCall).
    deps.media.on('dtmf', (e) => {
      const call = this.#live.get(e.callId);
      if (call instanceof LiveCall && e.legTag === CALLER_LEG) {
        call.digitPressed(e.digit, e.source ?? 'rfc4733-log', e.durationMs);
      }
    });
    // The calls whose media engine died and did not come back with them end with END.0502, billed to the loss.
    deps.media.on('sessions-lost', (callIds, at) => {
      for (const id of callIds) void this.#live.get(id)?.mediaFailed(at);
    });
    // A trunk going up or down reaches staff streams (TRUNK.0100).
    deps.sip.trunkHealth?.on('change', (c) => void publishTrunkState(deps.publisher, c));
    deps.sip.onInvite(async (req, srv, origin) => {
      if (this.#closed) return void srv.send(503, 'Service Unavailable');
      if (origin.kind === 'node') return this.#serveNodeLeg(req, srv, origin.nodeId);
      if (origin.kind === 'trunk') return runInbound(this.#services, req, srv, origin.trunk);
      const services = this.#services;
      if (!hasLocator(services)) return void srv.send(503, 'Service Unavailable');
      // RFC 3891: a phone taking the place of a leg of a live call of its account (calls/transfer/replaces-invite.ts).
      if (req.headers.get('replaces') !== undefined) return this.#transfers.replace(req, srv, origin.identity);
      return runEndUserCall(services, req, srv, origin.identity);
    });
  }

  /** A leg from another node into a conference or a queue held here; refused 403 on SQLite (no nodes). */
  async #serveNodeLeg(req: SipRequest, srv: Responder, fromNode: string): Promise<void> {
    const d = this.#nodeLegs;
    if (!d || !this.#queueNodes) return void srv.send(403, 'Forbidden');
    const accepted = await acceptNodeLeg(d, req, srv, fromNode);
    if (!accepted) return;
    const { join, row } = accepted;
    if (join.kind === 'queue') return this.#queueNodes.serve(join, row, req, srv, fromNode);
    return serveConferenceLeg(d, join, row, req, srv, fromNode);
  }

  #track(row: CallRow): LiveCall {
    // SIP capture files the messages being handled (this call's legs) under its ids.
    this.#deps.sip.capture?.claim(row.id, row.sid);
    const life = this.#services.lifecycle(row);
    const call = new LiveCall(this.#services, life, mediaOfCall(this.#deps.media, row.id), this.#services.dial);
    this.#live.set(row.id, call);
    void life.ended.then(() => this.#live.delete(row.id));
    return call;
  }

  #trackBridge(row: CallRow, opts: { unbilled?: boolean } = {}): BridgedCall {
    this.#deps.sip.capture?.claim(row.id, row.sid);
    const life = this.#services.lifecycle(row);
    // Emergency calls are never billed nor cut for credit (flows/emergency.ts).
    const billing = row.emergency || opts.unbilled ? undefined : this.#deps.billing;
    const call = new BridgedCall(
      {
        media: this.#deps.media,
        log: this.#log,
        billing,
        // Phones on an on-net call may transfer it; an emergency call is never transferred away from the PSAP.
        onBridged: row.emergency ? undefined : (c, legs) => this.#transfers.watch(c, legs),
      },
      life,
    );
    this.#live.set(row.id, call);
    void life.ended.then(() => this.#live.delete(row.id));
    return call;
  }

  /** A PSTN leg of `parent` (a Dial, or a phone's call forwarded to a number): its own outbound CDR. */
  async #openChildLeg(parent: LiveCall | BridgedCall, from: string, to: string): Promise<ChildLeg> {
    const call = {
      account_id: parent.life.row.account_id,
      direction: 'outbound' as const,
      from_number: from,
      to_number: to,
    };
    const leg = await this.#childLegs.open(parent, call, true);
    this.#deps.sip.capture?.claim(leg.id, leg.life.row.sid);
    return leg;
  }

  /** Holds a live call by id (billing cuts, tests). */
  get(callId: string): LiveCall | BridgedCall | undefined {
    return this.#live.get(callId);
  }

  /** The row of a call this process holds (a leg or a child leg), as it knows it now; undefined otherwise. */
  rowOf(callId: string): CallRow | undefined {
    return this.#live.get(callId)?.life.row ?? this.#childLegs.rowOf(callId);
  }

  /** Calls held here, legs from other nodes into rooms held here included (a drain waits for them too). */
  get liveCount(): number {
    return this.#live.size + (this.#nodeLegs?.legs.size ?? 0);
  }

  async originate(row: CallRow, opts: OriginateOptions): Promise<void> {
    const call = this.#track(row);
    await call.life.initiated();
    void runOriginate(this.#services, call, opts.timeoutSeconds, opts.machineDetection).catch((e) => {
      this.#log.error({ err: e, call: row.sid }, 'originate failed');
      void call.end(ReasonCodes.carrierFailure);
    });
  }

  async hangup(row: CallRow): Promise<CallRow> {
    const live = this.#live.get(row.id);
    if (live) return live.end(live.life.isAnswered ? ReasonCodes.normalHangup : ReasonCodes.canceled);
    // The store shows the call live but this switch does not hold it: close it as reconciled (spec: END.0504),
    // billed up to the last credit heartbeat, reported once, exactly as the periodic sweep would.
    if (this.#deps.reconcile) await this.#deps.reconcile(row.id);
    else await this.#services.lifecycle(row).end(ReasonCodes.reconciled);
    return (await findCallAnyAccount(this.#deps.db, row.id)) ?? row;
  }

  async redirect(row: CallRow, to: InterpreterStart, source: 'url' | 'twiml'): Promise<CallControlOutcome> {
    const live = this.#live.get(row.id);
    if (!live) return 'not_held';
    return live instanceof LiveCall ? live.redirect(to, source) : 'no_verbs';
  }

  async sendDigits(row: CallRow, digits: string): Promise<CallControlOutcome> {
    const live = this.#live.get(row.id);
    if (!live) return 'not_held';
    return live instanceof LiveCall ? live.sendDigits(digits) : 'no_verbs';
  }

  /** Ends a call for billing (BILL.0403, END.0408, END.0503); a call this process does not hold is left alone. */
  cut(callId: string, reason: (typeof ReasonCodes)[keyof typeof ReasonCodes]): void {
    void (this.#live.get(callId) ?? this.#childLegs.parentOf(callId))?.end(reason);
  }

  /** The credit monitor's warning (BILL.0311): the paying leg of the call (a Dial leg's parent) hears it. */
  warnCredit(callId: string, w: CreditWarningNotice): void {
    const call = this.#live.get(callId) ?? this.#childLegs.warnedParentOf(callId);
    if (call && !call.isEnding) this.#creditNotices.play(call.life.row.id, w, call.life.ended);
  }

  isLive(callId: string): boolean {
    return this.#live.has(callId) || this.#childLegs.has(callId);
  }

  /** A voicemail message changed outside a call (an API delete): the end-user's phones hear of it (MWI). */
  mailboxChanged(accountId: string, endUserId: string): void {
    void this.#deps.sip.mwi.changed(accountId, endUserId).catch(() => undefined);
  }

  /**
   * Ends (BYE) the calls another node took over while this one was silent (declared gone at `goneAt`): each call
   * this process holds whose record is no longer live, or was written before `goneAt` (the taking node closes
   * those, and may not have reached them yet). A call the store has closed must not run on unbilled; whichever
   * of the two ends it first writes the record, once (END.0504). Answers how many it ended.
   */
  async endTakenOver(goneAt: string): Promise<number> {
    const held = [...this.#live.values()];
    const taken = await Promise.all(
      held.map(async (l) => {
        const row = await findCallAnyAccount(this.#deps.db, l.life.row.id);
        const live = row && (LIVE_CALL_STATUSES as readonly string[]).includes(row.status);
        return !live || Date.parse(row.created_at) <= Date.parse(goneAt) ? l : undefined;
      }),
    );
    const ending = taken.filter((l) => l !== undefined);
    await Promise.all(ending.map((l) => l.end(ReasonCodes.reconciled)));
    return ending.length;
  }

  /**
   * Shutdown: every call still up is ended (BYE, billed) as cut by its node's stop (END.0505), and every leg another
   * node's call has into a room held here gets a BYE, so that node's caller leaves at once rather than when it finds
   * this node out of service.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const legs = this.#nodeLegs?.legs;
    for (const end of legs?.values() ?? []) end();
    await Promise.all([...this.#live.values()].map((l) => l.end(ReasonCodes.nodeStopCut)));
    // The legs' BYEs are sent as each leaves its room; a moment for that before the SIP stack closes.
    for (let i = 0; i < 20 && (legs?.size ?? 0) > 0; i++) await new Promise((r) => setTimeout(r, 50));
  }
}
