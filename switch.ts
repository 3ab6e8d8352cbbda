import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './config/index.js';
import { parseHepUrl, roomLogger, setLogLevel, SETTINGS } from './config/index.js';
import {
  openDb,
  openReadPool,
  migrate,
  pingDb,
  probeStoreQueue,
  startCallsSearchIndexer,
  ensureLiveCallTriggers,
  setStoreNodeId,
  isPostgres,
  nodeSecret,
  type Db,
} from './store/index.js';
import {
  RtpengineSupervisor,
  MediaEngines,
  MediaService,
  RecordingRetention,
  startCallPersistence,
} from './media/index.js';
import {
  SipApplication,
  Registrar,
  ensureSipCertificate,
  SecurityGate,
  knexBanStore,
  SipCapture,
  HepSender,
  sipTraceToken,
  pathNextHop,
} from './sip/index.js';
import {
  CreditMonitor,
  RateBook,
  NodeWatch,
  ReconcileSweep,
  StoreAdmission,
  reconcileCall,
  type BillingEmit,
} from './billing/index.js';
import { OverloadControl, loadSignalsOf } from './overload/index.js';
import { createApiServer, feedMetrics, StatsRollup } from './api/index.js';
import { SwitchMetrics } from './metrics/index.js';
import {
  EventBus,
  EventPublisher,
  StatusCallbackOutbox,
  PlatformConcurrencyMonitor,
  attachStream,
  relayEventsAcrossNodes,
  type EventCode,
} from './events/index.js';
import {
  consumeStreamToken,
  countOutboxBacklog,
  findCallAnyAccount,
  openNodeChannel,
  lapsedStreamPrincipals,
  LIVE_CALL_STATUSES,
  onAuthWrite,
  remoteRegistrations,
  storedPath,
  Housekeeping,
} from './store/index.js';
import { NodeRoutedCallEngine, SwitchCallEngine, publishMediaEngineState } from './calls/index.js';
import { firstRun, firstRunMessage, loadServerSecret } from './cli/index.js';
import { Console, Portal } from './web/index.js';
import { UrlPolicy } from './kit/index.js';

const log = roomLogger('switch');

/**
 * The composition root: builds each room with what it needs and starts and stops them in order. Everything
 * here is wiring; behaviour lives in the rooms.
 */
/**
 * SQLite: writes of the switch wait up to this long for others to share their commit (store/db.ts). A commit writes
 * at least one page of each of the ~21 indexes a call leg touches, whatever it holds, so several legs a commit cost
 * far less each than one (the figures: docs/performance.md, "Group commit"). The API commits the open group before each request,
 * so its reads see every earlier write; an orderly exit or an uncaught exception commits it too, so what a SIGKILL
 * or a power cut can lose is at most the last 15 ms of writes.
 */
const GROUP_COMMIT_WINDOW_MS = 15;
/** This build's version (package.json, beside switch.ts or one floor up from dist/), shown in `simu nodes`. */
const SIMU_VERSION = (() => {
  for (const rel of ['package.json', '../package.json']) {
    try {
      return String(JSON.parse(readFileSync(path.join(import.meta.dirname, rel), 'utf8')).version);
    } catch {
      /* the other place */
    }
  }
  return 'unknown';
})();
/** How long a drained switch waits for its calls' last status callbacks before it stops (the rest stay queued). */
const CALLBACKS_SETTLE_MS = 5000;

export class Switch {
  #db: Db | undefined;
  #supervisor: RtpengineSupervisor | undefined;
  #engines: MediaEngines | undefined;
  readonly #closers: Array<() => Promise<void>> = [];
  #admission: StoreAdmission | undefined;
  #outbox: StatusCallbackOutbox | undefined;
  #publisher: EventPublisher | undefined;
  #draining = false;
  #security: SecurityGate | undefined;

  constructor(readonly config: Config) {}

  /** The call engine (after start), for tests and the CLI's in-process tools. */
  calls: SwitchCallEngine | undefined;
  /** The SIP edge (after start). */
  sip: SipApplication | undefined;

  get db(): Db {
    if (!this.#db) throw new Error('switch not started');
    return this.#db;
  }

  /** Starts every room; resolves to the start-up banner. */
  async start(): Promise<string> {
    const { config } = this;
    const db = openDb({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      groupCommit: true,
      groupCommitWindowMs: GROUP_COMMIT_WINDOW_MS,
      warmPool: true,
      watchOtherWriters: true,
    });
    this.#db = db;
    this.#closers.push(() => db.destroy());
    setStoreNodeId(config.node.id);
    await migrate(db);
    // Admission reads the account's live calls from a count triggers keep (SQLite); a rebuilt calls table loses them.
    if (await ensureLiveCallTriggers(db)) log.warn('the live-call count triggers were missing: made again, recounted');
    // The calls search index is written in batches past a watermark, not per insert (store/calls-search.ts).
    const searchIndexer = startCallsSearchIndexer(db, (err) => log.warn({ err }, 'calls search indexing failed'));
    this.#closers.push(async () => searchIndexer.stop());
    const first = await firstRun(db, config);
    const secret = await serverSecretOf(db, config.dataDir);

    if (config.rtpengine.urls.length === 0) {
      // Where the engine keeps its calls, so a restart after a crash restores them (media/redis-supervisor.ts).
      const persistence = await startCallPersistence(config.rtpengine.redis, {
        dataDir: config.dataDir,
        logger: roomLogger('media'),
      });
      const redis = persistence.supervisor;
      if (redis) this.#closers.push(() => redis.stop());
      this.#supervisor = new RtpengineSupervisor({
        redis: persistence.redis,
        ngPort: config.rtpengine.ngPort,
        interface: config.rtpengine.interface,
        portMin: config.rtpengine.portMin,
        portMax: config.rtpengine.portMax,
        dataDir: config.dataDir,
        logger: roomLogger('media'),
        dtmfLogPort: config.rtpengine.dtmfPort,
      });
      const sup = this.#supervisor;
      this.#closers.push(() => sup.stop());
      await sup.start();
    }
    this.#engines = new MediaEngines({
      urls: config.rtpengine.urls,
      local: this.#supervisor,
      logger: roomLogger('media'),
    });
    await this.#engines.start();

    // Against SSRF: where customer URLs may point; docs/security.md "Outbound URLs". The calls room builds its
    // own from the same settings for call-control requests.
    const urlPolicy = new UrlPolicy({
      allowPrivate: config.webhooks.allowPrivate,
      allow: config.webhooks.allowNetworks,
    });
    const bus = new EventBus();
    const publisher = new EventPublisher({ db, bus, logger: roomLogger('events') });
    // An engine lost, restarted or back reaches staff streams (MEDIA.0100).
    this.#engines.on('engine-state', (state) => publishMediaEngineState(publisher, state));
    // Before the store closes (closers run in reverse): events still being group-committed are written.
    this.#closers.push(() => publisher.flushed());
    const outbox = new StatusCallbackOutbox({ db, publisher, urlPolicy, nodeId: config.node.id }).start();
    this.#outbox = outbox;
    this.#publisher = publisher;
    this.#closers.push(() => outbox.close());
    // Nodes sharing PostgreSQL: one channel (LISTEN/NOTIFY) for other nodes' events and for commands on calls.
    const link = config.databaseUrl
      ? openNodeChannel(db, config.node.id, (err) =>
          log.warn({ err }, 'node channel: lost its connection or a message; listening again in a second'),
        )
      : undefined;
    if (link) {
      const stopRelay = relayEventsAcrossNodes(bus, link);
      this.#closers.push(async () => {
        stopRelay();
        await link.close();
      });
      await Promise.race([link.ready, new Promise((r) => setTimeout(r, 5000).unref())]);
    }
    const concurrency = new PlatformConcurrencyMonitor({ db, publisher });
    this.#closers.push(async () => concurrency.close());

    const media = new MediaService({
      engines: this.#engines,
      dataDir: config.dataDir,
      logger: roomLogger('media'),
      urlPolicy,
      engineRecordingDir: this.#supervisor?.recordingDir,
      localMediaAddress: config.rtpengine.interface,
      // rtpengine reports RFC 4733 digits as JSON to this port (local engine only).
      dtmfPort: this.#supervisor ? config.rtpengine.dtmfPort : undefined,
    });
    await media.start();
    this.#closers.push(() => media.close());

    // Overload control: new calls beyond what the box carries get 503 + Retry-After at once (overload/).
    const admission = new StoreAdmission(db);
    this.#admission = admission;
    const engines = this.#engines;
    const signals = loadSignalsOf(
      probeStoreQueue(db),
      () => admission.sampleTurnWait(),
      () => engines.sampleSendWait(),
    );
    const overloadLog = roomLogger('billing').child({ module: 'overload' });
    // With overload.udpFront, SIP over UDP is received in a worker thread that applies the limit itself.
    const edge: { sip?: SipApplication } = {};
    const overload = new OverloadControl({
      signals: signals.read,
      settings: config.overload,
      outsideRefusals: () => edge.sip?.frontRefusals ?? 0,
      busySinceTick: signals.busySinceRead,
      onGate: () => edge.sip?.overloadChanged(),
      onChange: (state) => {
        edge.sip?.overloadChanged();
        publisher.publishPlatformShedding(state);
        if (state.shedding) overloadLog.warn(state, 'overload: shedding new calls');
        else overloadLog.warn(state, 'overload: no longer shedding');
      },
    }).start();
    this.#closers.push(async () => {
      overload.stop();
      signals.close();
    });

    const security = new SecurityGate({
      settings: securitySettingsOf(config.security),
      store: knexBanStore(db),
      logger: roomLogger('sip').child({ module: 'security' }),
    });
    this.#security = security;
    // SIP capture (sip/capture/): calls' ladders in memory for the console and `simu trace`, HEP when configured.
    const capture = sipCapture(config);
    if (capture) this.#closers.push(() => capture.close());
    const sip = new SipApplication({
      db,
      config,
      logger: roomLogger('sip'),
      security,
      overload,
      capture,
      draining: () => this.#draining,
    });
    edge.sip = sip;
    // End-users register with phone tokens (digest or Bearer); the registrar also authenticates their INVITEs.
    const registrar = new Registrar({
      app: sip,
      db,
      secret,
      logger: roomLogger('sip'),
      events: publisher,
      gate: security,
      settings: {
        requireEncryption: config.sip.requireEncryption,
        maxBindingsPerUser: config.sip.maxBindingsPerUser,
        keepAliveSeconds: config.sip.keepAliveSeconds,
        keepAliveMisses: config.sip.keepAliveMisses,
      },
    });
    await registrar.start();
    this.#closers.push(async () => registrar.close());
    // Billing events carry the call they concern as data.callId; the publisher files them under that call.
    const billingEmit: BillingEmit = (accountId, code, data) => {
      const callId = typeof data.callId === 'string' ? data.callId : undefined;
      // A call this process holds gives its row from memory (no read of the calls table per charge).
      const callRow =
        callId === undefined ? undefined : (this.calls?.rowOf(callId) as Record<string, unknown> | undefined);
      publisher
        .emit({ accountId, code: code as EventCode, callId, data, callRow })
        .catch((e) => log.error({ err: e, code }, 'billing event lost'));
    };
    const rates = new RateBook(db, {
      increment: { initialSeconds: config.billing.initialSeconds, incrementSeconds: config.billing.incrementSeconds },
    });
    const monitor = new CreditMonitor({
      db,
      rates,
      emit: billingEmit,
      cut: (id, reason) => this.calls?.cut(id, reason),
      warn: (id, w) => this.calls?.warnCredit(id, w),
      // Nodes share a wallet only on PostgreSQL: there the credit other nodes' calls hold is counted too.
      nodeId: config.databaseUrl ? config.node.id : null,
    });
    const calls = new SwitchCallEngine({
      db,
      config,
      publisher,
      media,
      sip,
      admission,
      billing: monitor,
      locator: {
        lookup: async (accountId, ext) => {
          const here = registrar.location.lookup(accountId, ext).map((b) => ({
            contact: b.contact,
            target: { transport: b.transport, host: b.sourceAddress, port: b.sourcePort, flowId: b.flowId },
            ...(b.path && { route: b.path }),
          }));
          if (!config.databaseUrl) return here;
          // Phones registered through another node over UDP, or through a front, are reached from here too
          // (docs/architecture.md).
          const known = new Set(here.map((b) => b.contact));
          const there = await remoteRegistrations(db, accountId, ext, Date.now()).catch((err: unknown) => {
            log.warn({ err }, 'registrations of other nodes not read');
            return [];
          });
          return [
            ...here,
            ...there
              .filter((r) => !known.has(r.contact))
              .map((r) => {
                const route = r.path ? storedPath(r.path) : undefined;
                // Through a front, its Path's first hop (the REGISTER's source may be the front's TCP port).
                const source = { transport: 'UDP' as const, host: r.source_address, port: r.source_port };
                return {
                  contact: r.contact,
                  target: (route && pathNextHop(route)) ?? source,
                  ...(route && { route }),
                };
              }),
          ];
        },
        acquireCallSlot: (tokenId, max) => registrar.location.acquireCallSlot(tokenId, max),
        releaseCallSlot: (tokenId) => registrar.location.releaseCallSlot(tokenId),
      },
      recordingRetentionDays: config.recordings.retentionDays,
      // A hangup of a call the switch no longer holds: the sweep's path, one call at a time (and, like the sweep,
      // the credit monitor stops tracking what it closed).
      reconcile: async (id) => {
        const closed = await reconcileCall(db, id, Date.now(), { emit: billingEmit, increment: rates.increment });
        if (closed) monitor.release(id);
        return closed;
      },
    });
    this.calls = calls;
    this.sip = sip;
    const sweep = new ReconcileSweep({
      db,
      isLive: (id) => calls.isLive(id),
      emit: billingEmit,
      // On PostgreSQL, nodes share the store: each sweeps its own calls (a dead node's are closed by NodeWatch).
      nodeId: config.databaseUrl ? config.node.id : null,
      monitor,
    });
    await sweep.start();
    // Before calls.close is registered, so that it runs after the calls have ended (closers run in reverse).
    const nodeWatch = await new NodeWatch({
      db,
      node: {
        id: config.node.id,
        version: SIMU_VERSION,
        sip_address: `${config.publicHost}:${config.sip.port}`,
        http_address: `${config.http.host === '0.0.0.0' ? config.publicHost : config.http.host}:${config.http.port}`,
        pid: process.pid,
        started_at: new Date().toISOString(),
      },
      goneAfterMs: config.node.goneAfterSeconds * 1000,
      liveCalls: () => calls.liveCount,
      draining: () => this.#draining,
      emit: billingEmit,
      increment: rates.increment,
      onClosed: (id) => monitor.release(id),
      onDeclaredGone: async (goneAt) => void (await calls.endTakenOver(goneAt)),
    }).start();
    this.#closers.push(() => nodeWatch.close());
    // Expired and soft-deleted recordings lose their audio (the rows stay).
    const retention = new RecordingRetention({ db, dataDir: config.dataDir, log: roomLogger('calls') }).start();
    this.#closers.push(() => retention.close());
    // Finished status callbacks past their retention, expired idempotency keys and stream tokens are deleted.
    const storeLog = roomLogger('store');
    const housekeeping = new Housekeeping({
      db,
      callbackRetentionDays: config.webhooks.deliveryRetentionDays,
      onSwept: (rows) => {
        if (rows.callbacks + rows.idempotencyKeys + rows.streamTokens > 0)
          storeLog.info(rows, 'housekeeping: rows deleted');
      },
      onError: (err) => storeLog.warn({ err }, 'housekeeping sweep failed; tried again in an hour'),
    }).start();
    this.#closers.push(() => housekeeping.close());
    this.#closers.push(() => monitor.close());
    this.#closers.push(() => sweep.close());
    // SIP over WebSocket (RFC 7118) for browser phones; 0 disables a transport.
    // and SIP over TLS (RFC 3261 §26.3.1) for phones that want encrypted signalling and SRTP (SDES) media.
    const { wsPort, wssPort, tlsPort } = config.sip;
    const certificate = () =>
      ensureSipCertificate({ dataDir: config.dataDir, ...pick(config.sip), host: config.publicHost });
    await sip.listen({
      ...(wsPort > 0 && { ws: { host: config.sip.host, port: wsPort } }),
      ...(wssPort > 0 && { wss: { host: config.sip.host, port: wssPort, ...certificate() } }),
      ...(tlsPort > 0 && { tls: { host: config.sip.host, port: tlsPort, ...certificate() } }),
    });
    this.#closers.push(() => sip.close());
    this.#closers.push(() => calls.close());

    // GET /metrics: call counters fed from the bus, the rest read at each scrape.
    const metrics = new SwitchMetrics({
      liveCalls: () => calls.liveCount,
      outboxBacklog: () => countOutboxBacklog(db),
      mediaUp: async () => (await this.health()).media,
      mediaEngines: () => engines.status(),
      sipCapture: capture && (() => capture.figures()),
    });
    const unfeed = feedMetrics(bus, metrics);
    this.#closers.push(async () => {
      unfeed();
      metrics.close();
    });

    // The charts, the roll-up job and the console's live view read on their own SQLite connections.
    const statsRead = openReadPool(db, 2);
    this.#closers.push(async () => void (await statsRead?.destroy()));
    const readDb = statsRead ?? db;
    const portal = new Portal({ db, readDb, config });
    this.#closers.push(() => portal.close());
    // The operator console, and the hourly CDR roll-up its and the portal's charts read.
    const rollup = new StatsRollup(db, {
      readDb,
      onError: (err) => log.warn({ err }, 'call stats roll-up failed'),
    }).start();
    this.#closers.push(() => rollup.close());
    const operatorConsole = new Console({
      db,
      readDb,
      config,
      live: {
        hangup: async (id) => {
          const call = await findCallAnyAccount(db, id);
          if (!call || !LIVE_CALL_STATUSES.includes(call.status)) return false;
          await calls.hangup(call);
          return true;
        },
        overload: () => ({ ...overload.state() }),
        registrations: () => registrar.location.size,
        // Each engine with its losses and restarts (MediaEngineStatus): the live page shows them beside its health.
        media: () => this.#engines?.status() ?? [],
        sipLadder: (id) => capture?.ladder(id),
      },
      sipTraceToken: sipTraceToken(secret),
    });
    this.#closers.push(async () => operatorConsole.close());
    const consoleMw = operatorConsole.middleware();
    const portalMw = portal.middleware();
    // A command for a call or a room another node holds goes to that node (calls/node-routed-call-engine.ts).
    const routed = link
      ? new NodeRoutedCallEngine({ db, link, local: calls, goneAfterMs: config.node.goneAfterSeconds * 1000 })
      : undefined;
    if (routed) this.#closers.push(async () => routed.close());
    const apiCalls = routed ?? calls;
    const { server } = createApiServer({
      before: (ctx, next) => consoleMw(ctx, () => portalMw(ctx, next)),
      db,
      config,
      calls: apiCalls,
      admission,
      overload,
      signUrlSecret: secret,
      health: () => this.health(),
      metrics,
    });
    const stream = attachStream(server, {
      bus,
      consumeToken: (t) => consumeStreamToken(db, t),
      // Sockets close when their key is revoked or their account suspended.
      lapsed: (accounts, keys) => lapsedStreamPrincipals(db, accounts, keys),
      onAuthChange: onAuthWrite,
      logger: roomLogger('events'),
    });
    this.#closers.push(() => stream.close());
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.http.port, config.http.host, () => resolve());
    });
    this.#closers.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections?.();
          server.close(() => resolve());
        }),
    );

    log.info({ http: config.http.port, sip: config.sip.port }, 'switch started');
    const lines = [
      `Simu is running: API ${config.publicBaseUrl}/api/ (health: ${config.publicBaseUrl}/api/health/)`,
      `  SIP: udp and tcp ${config.sip.host}:${config.sip.port}` +
        (config.sip.wsPort > 0 ? `, ws ${config.sip.wsPort}` : '') +
        (config.sip.wssPort > 0 ? `, wss ${config.sip.wssPort}` : ''),
      `  portal: ${config.publicBaseUrl}/portal/, operator console: ${config.publicBaseUrl}/console/`,
      `  media: ${this.#supervisor ? `rtpengine pid ${this.#supervisor.pid} (supervised)` : `external rtpengine ${config.rtpengine.urls.join(', ')}`}`,
      `  data: ${config.dataDir}${config.databaseUrl ? ` (store: PostgreSQL)` : ' (store: SQLite)'}`,
    ];
    if (first) lines.push(firstRunMessage(first, config));
    return lines.join('\n');
  }

  /** Store and media reachability, and whether this process drains, for GET /api/health/. */
  async health(): Promise<{ store: boolean; media: boolean; draining: boolean }> {
    const store = this.#db ? await pingDb(this.#db) : false;
    const media = this.#engines ? this.#engines.list().some((e) => e.healthy) : false;
    return { store, media, draining: this.#draining };
  }

  /**
   * Drains this process: new calls are refused from now on (SIP 503 and API 503 PLATFORM.0503, both with
   * Retry-After; health answers 503) while calls in progress, their in-dialog requests included, go on. When they
   * have all ended, or `timeoutMs` has passed and the rest were ended (BYE, billed), the calls' last status
   * callbacks are given up to CALLBACKS_SETTLE_MS to be delivered. Resolves with the number of calls it ended.
   */
  async drain(timeoutMs: number, pollMs = 250): Promise<number> {
    this.#draining = true;
    this.#admission?.drainNode();
    const deadline = Date.now() + timeoutMs;
    while ((this.calls?.liveCount ?? 0) > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, Math.min(pollMs, Math.max(1, deadline - Date.now()))));
    const left = this.calls?.liveCount ?? 0;
    if (left > 0) await this.calls?.close();
    await this.#publisher?.flushed();
    await this.#outbox?.settled(CALLBACKS_SETTLE_MS);
    return left;
  }

  get draining(): boolean {
    return this.#draining;
  }

  /**
   * A configuration read again (SIGHUP): the settings of LIVE_SETTINGS that changed take effect at once (the log
   * level; the TLS certificate, for connections accepted from now on; security limits); a change of any other is
   * refused, named in the answer, and the switch goes on with the value it started with.
   */
  reload(next: Config): { applied: string[]; refused: string[] } {
    const changed = SETTINGS.map((s) => s.key).filter(
      (key) => JSON.stringify(valueAt(this.config, key)) !== JSON.stringify(valueAt(next, key)),
    );
    const applied = changed.filter((key) => LIVE_SETTINGS.test(key));
    const refused = changed.filter((key) => !LIVE_SETTINGS.test(key));
    if (applied.length === 0) return { applied, refused };
    if (applied.some((k) => k.startsWith('sip.tls')) && (next.sip.tlsPort > 0 || next.sip.wssPort > 0)) {
      // Read before anything changes: a certificate that cannot be read leaves the running one in place.
      const pem = ensureSipCertificate({ dataDir: next.dataDir, ...pick(next.sip), host: next.publicHost });
      this.sip?.ua.setCertificate(pem);
    }
    for (const key of applied) setValueAt(this.config, key, valueAt(next, key));
    if (applied.includes('logLevel')) setLogLevel(next.logLevel);
    if (applied.some((k) => k.startsWith('security.'))) this.#security?.reconfigure(securitySettingsOf(next.security));
    return { applied, refused };
  }

  /** Stops rooms in reverse order of starting; safe to call twice. */
  async stop(): Promise<void> {
    while (this.#closers.length) {
      const close = this.#closers.pop()!;
      await close().catch((e) => log.error({ err: e }, 'error while closing'));
    }
  }
}

const pick = (s: Config['sip']) => ({ cert: s.tlsCert, key: s.tlsKey });

/** Settings a reload applies to the running switch (Switch.reload); the others need a restart. */
const LIVE_SETTINGS = /^(logLevel|sip\.tlsCert|sip\.tlsKey|security\.\w+)$/;

/**
 * The server secret (phone tokens, recording URLs, trace tokens): the data directory's file on one box; on
 * PostgreSQL the cluster's, kept in the store, so a token minted through one node verifies on every other. The first
 * node to ask seeds it with its own file's secret, so the tokens an existing box minted stay valid.
 */
async function serverSecretOf(db: Db, dataDir: string): Promise<string> {
  const local = loadServerSecret(dataDir);
  if (!isPostgres(db)) return local;
  const shared = await nodeSecret(db, 'server', local);
  if (shared !== local)
    log.warn({ dataDir }, "this node's server-secret file differs from the cluster's: the cluster's is used");
  return shared;
}

function securitySettingsOf(sec: Config['security']) {
  return {
    flood: { maxRequests: sec.floodMaxRequests, windowSeconds: sec.floodWindowSeconds, banSeconds: sec.banSeconds },
    auth: {
      maxFailuresPerSource: sec.authMaxFailures,
      banSeconds: sec.banSeconds,
      maxFailuresPerUser: sec.userLockoutFailures,
      lockoutSeconds: sec.userLockoutSeconds,
    },
    scanners: { banAfter: sec.scannerBanAfter },
  };
}

/** The value of a dotted settings key ('sip.tlsCert') in a configuration. */
function valueAt(config: Config, key: string): unknown {
  return key.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], config);
}

function setValueAt(config: Config, key: string, value: unknown): void {
  const path = key.split('.');
  const last = path.pop()!;
  const parent = path.reduce<Record<string, unknown>>((o, k) => o[k] as Record<string, unknown>, config as never);
  parent[last] = value;
}

/** SIP capture as configured: undefined when no ladder is kept and no HEP collector is named. */
function sipCapture(config: Config): SipCapture | undefined {
  const c = config.capture;
  const logger = roomLogger('sip').child({ module: 'capture' });
  const collector = c.hepUrl ? parseHepUrl(c.hepUrl) : undefined;
  const hep = collector && new HepSender({ ...collector, captureId: c.hepCaptureId, queueLimit: c.hepQueue, logger });
  if (!SipCapture.wanted({ ladderMessages: c.ladderMessages, hep })) return undefined;
  return new SipCapture({
    ladderMessages: c.ladderMessages,
    ladderMinutes: c.ladderMinutes,
    hep,
    advertisedAddress: config.publicHost,
  });
}
