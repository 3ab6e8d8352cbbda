import type { Config, Logger } from '../config/index.js';
import { BUILT_IN_EMERGENCY_NUMBERS, isEmergencyNumber } from '../numbers/index.js';
import { setTrunkHealth, setTrunkRegistration, type Db, type TrunkRow } from '../store/index.js';
import {
  DEFAULT_CONNECTION_LIMITS,
  UserAgent,
  type ListenOptions,
  type Responder,
  type SipRequest,
} from './stack/index.js';
import { addressMatches, TrunkDirectory } from './trunks.js';
import { SipFront } from './front.js';
import { TrunkHealth, type TrunkStateChange } from './trunk-health.js';
import { pingTrunk } from './trunk-ping.js';
import { MessageWaiting } from './message-waiting.js';
import { FRONT_POLICY_MODULE, frontPolicyData, setFrontCap, type FrontPolicyData } from './front-policy.js';
import { SwitchNames } from './switch-names.js';
import { UpstreamRegistrations, type RegistrationChange } from './upstream-registration.js';
import type { SecurityGate, SecurityStats } from './security/index.js';
import type { SipCapture } from './capture/index.js';
import type { NewCallGate } from '../overload/index.js';

/**
 * Who sent an INVITE, as far as the edge could tell before handing it to the call engine. `node`: another node of
 * the cluster says it sent it (NODE_LEG_HEADER), unverified here: the call engine checks its signature.
 */
export type InviteOrigin =
  | { kind: 'trunk'; trunk: TrunkRow }
  | { kind: 'end-user'; identity: EndUserIdentity }
  | { kind: 'node'; nodeId: string };

/** The header naming the node that sent a leg between nodes (a caller of its joining a room held here). */
export const NODE_LEG_HEADER = 'X-Simu-Node';

export interface EndUserIdentity {
  accountId: string;
  endUserId: string;
  extension: string;
  tokenId: string;
  maxConcurrent: number;
}

export type InviteHandler = (req: SipRequest, srv: Responder, origin: InviteOrigin) => Promise<void>;

/** Authenticates an end-user's request (REGISTER or INVITE); answers the challenge itself when it returns null. */
export type EndUserAuthenticator = (req: SipRequest, srv: Responder) => Promise<EndUserIdentity | null>;

/** The methods the switch's SIP edge takes, as its OPTIONS answer lists them. */
const SWITCH_ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS, REGISTER, SUBSCRIBE, REFER, INFO, UPDATE, PRACK';

/**
 * The switch's SIP edge: one UserAgent on every configured transport, OPTIONS answered, INVITEs classified
 * (carrier trunk by source address, else an authenticated end-user) and handed to the call engine.
 */
export class SipApplication {
  readonly ua: UserAgent;
  readonly trunks: TrunkDirectory;
  /** OPTIONS pings of the trunks that have them on, and Retry-After holds. */
  readonly trunkHealth: TrunkHealth;
  /** REGISTERs of the trunks that register to their carrier. */
  readonly upstream: UpstreamRegistrations;
  /** Message-waiting indication to phones (SUBSCRIBE/NOTIFY message-summary, RFC 3842). */
  readonly mwi: MessageWaiting;
  /** The switch's own names and addresses (a digest-uri may name the switch instead of the Request-URI). */
  readonly names: SwitchNames;
  /** SIP capture, when on: the call engine names each call it makes (`claim`); ladders are read from it. */
  readonly capture: SipCapture | undefined;
  /** The trusted fronts (setting `sip.trustedFronts`): who sent a request that came through one (sip/front.ts). */
  readonly front: SipFront;
  #onInvite: InviteHandler | undefined;
  #authenticate: EndUserAuthenticator | undefined;
  readonly #log: Logger;
  /** The UDP front's policy data (front-policy.js), while a front is asked for: the cap is set on each change. */
  #frontPolicy: FrontPolicyData | undefined;

  #trustedTimer: NodeJS.Timeout | undefined;
  #bansTimer: NodeJS.Timeout | undefined;
  /** Carriers' signalling addresses and ranges (trunks' inbound addresses and hosts), re-read every 5 s. */
  #carriers: string[] = [];

  /** With `security`, every request passes the gate first (floods, scanners, bans; docs/security.md). */
  constructor(
    private readonly deps: {
      db: Db;
      config: Config;
      logger: Logger;
      security?: SecurityGate;
      /** Asked before every new INVITE is taken (overload control); refusals are answered 503 + Retry-After. */
      overload?: NewCallGate;
      /** Given every SIP message in and out: calls' ladders, HEP (capture/). */
      capture?: SipCapture;
      /** Whether this node drains: its OPTIONS answer 503, so a front's probing stops sending it new calls. */
      draining?: () => boolean;
    },
  ) {
    this.capture = deps.capture;
    this.#log = deps.logger;
    const gate = deps.security;
    const sip: Partial<Config['sip']> = deps.config.sip;
    const front = new SipFront(sip.trustedFronts ?? []);
    this.front = front;
    this.names = new SwitchNames({
      publicHost: deps.config.publicHost ?? '',
      domain: sip.domain ?? '',
      listenHost: sip.host ?? '',
      ports: [sip.port ?? 0, sip.tlsPort ?? 0, sip.wsPort ?? 0, sip.wssPort ?? 0],
    });
    this.ua = new UserAgent({
      logger: deps.logger,
      advertisedHost: deps.config.publicHost,
      // A banned source's datagrams are dropped and its connections closed before a byte of them is parsed.
      // A front is never refused whole: the gate judges each sender it reports (admitRequest).
      admitSource: gate ? (address) => front.trusts(address) || gate.admitSource(address) === 'allow' : undefined,
      connectionLimits: {
        perSource: sip.maxConnectionsPerSource ?? DEFAULT_CONNECTION_LIMITS.perSource,
        total: sip.maxConnections ?? DEFAULT_CONNECTION_LIMITS.total,
        firstMessageMs: (sip.firstMessageSeconds ?? DEFAULT_CONNECTION_LIMITS.firstMessageMs / 1000) * 1000,
        // A carrier's SBC may open many connections; it is held to the total only.
        exempt: (address) => this.isCarrierAddress(address) || front.trusts(address),
      },
      // In-dialog requests to a phone over UDP go to the address the dialog was learned from (the INVITE's or the
      // 2xx's source), not to whatever host its Contact or Record-Route names: a phone must not be able to make
      // the switch send BYEs and re-INVITEs anywhere. Carriers' gateways (trunk addresses and hosts) may move a
      // call's signalling to another of their gateways, so their Contact is followed.
      pinUdpDialogs: (address) => !this.isCarrierAddress(address),
      tap: deps.capture?.tap,
      admitRequest: gate
        ? (req) =>
            gate.inspect({
              source: front.origin(req).address,
              transport: req.source?.transport ?? 'UDP',
              method: req.method,
              userAgent: req.headers.get('user-agent'),
            }) === 'allow'
        : undefined,
    });
    const routing: Partial<Config['routing']> = deps.config.routing ?? {};
    this.trunkHealth = new TrunkHealth((t) => pingTrunk(this.ua, t, routing.pingIntervalSeconds ?? 10), {
      intervalSeconds: routing.pingIntervalSeconds ?? 10,
      downAfter: routing.pingDownAfter ?? 2,
      upAfter: routing.pingUpAfter ?? 2,
    });
    this.trunkHealth.on('change', (c) => this.#trunkChanged(c));
    this.trunks = new TrunkDirectory(deps.db, { allowLossMaking: routing.allowLossMaking, health: this.trunkHealth });
    this.upstream = new UpstreamRegistrations(this.ua);
    this.upstream.on('change', (c) => this.#registrationChanged(c));
    // RFC 3261 §11.2: what the switch takes. In dialogs: REFER (a phone's transfer), INFO (DTMF), UPDATE and
    // re-INVITE (session refresh), PRACK (reliable provisionals). Carriers probing with OPTIONS read this too.
    // A draining node answers 503 (RFC 3261 §21.5.4) so that a front probing with OPTIONS takes it out of its set.
    this.ua.onRequest('OPTIONS', (_req, srv) =>
      deps.draining?.()
        ? srv.send(503, 'Service Unavailable', { headers: { 'Retry-After': '5' } })
        : srv.send(200, 'OK', { headers: { Allow: SWITCH_ALLOW, Accept: 'application/sdp' } }),
    );
    this.mwi = new MessageWaiting({
      ua: this.ua,
      db: deps.db,
      log: deps.logger,
      authenticate: () => this.#authenticate,
    });
    this.ua.onRequest('SUBSCRIBE', (req, srv) => this.mwi.subscribe(req, srv), { inDialog: true });
    this.ua.onRequest('INVITE', (req, srv) => this.#invite(req, srv));
  }

  /** The security gate's counters (undefined without a gate): drops, bans, drops before parsing. */
  securityStats(): SecurityStats | undefined {
    return this.deps.security?.stats();
  }

  /** The call engine's entry for new calls. */
  onInvite(handler: InviteHandler): void {
    this.#onInvite = handler;
  }

  /** The registrar's end-user authentication, used for INVITEs from phones too. */
  useEndUserAuthentication(auth: EndUserAuthenticator): void {
    this.#authenticate = auth;
  }

  /**
   * Re-reads the carriers' addresses into the security gate (they are exempt from automatic bans). Runs every 5 s;
   * call it after adding a trunk in this process so the carrier is trusted at once.
   */
  async refreshTrustedAddresses(): Promise<void> {
    this.trunks.invalidate();
    const inbound = await this.trunks.inboundAddresses();
    this.#carriers = [...inbound, ...(await this.trunks.hosts())];
    this.deps.security?.setTrustedAddresses(inbound);
    if (this.ua.address('UDP')) this.upstream.sync(await this.trunks.all()); // once listening: REGISTERs need a socket
  }

  /** Whether an IP is a carrier's (a trunk's inbound address or range, or its host), as of the last refresh. */
  isCarrierAddress(address: string): boolean {
    return this.#carriers.some((p) => addressMatches(p, address));
  }

  async listen(extra: Partial<ListenOptions> = {}): Promise<void> {
    const { config, security } = this.deps;
    // Bans that survived a restart hold at once; carriers' addresses are exempt from automatic bans and from the
    // per-source connection cap, and are re-read so a `simu trunks add` reaches the running switch.
    if (security) await security.syncBans();
    await this.refreshTrustedAddresses();
    this.#trustedTimer = setInterval(() => void this.refreshTrustedAddresses().catch(() => undefined), 5000);
    this.#trustedTimer.unref();
    await this.ua.listen({
      udp: { host: config.sip.host, port: config.sip.port },
      tcp: { host: config.sip.host, port: config.sip.port },
      ...(config.overload?.udpFront && this.deps.overload?.gate && { udpFront: this.#frontOptions() }),
      ...extra,
    });
    this.overloadChanged();
    if (config.overload?.udpFront && !this.ua.udpFront)
      this.#log.warn(
        'overload.udpFront is on but the UDP front could not take the port: SIP over UDP is received as without it',
      );
    if (this.ua.udpFront && security) {
      // The front answers no banned source (the main thread drops their requests unanswered).
      const front = this.ua.udpFront;
      this.#bansTimer = setInterval(() => front.setBanned(security.bans().map((b) => b.address)), 1000);
      this.#bansTimer.unref();
    }
    this.trunkHealth.start(() => this.trunks.all());
    this.upstream.sync(await this.trunks.all());
  }

  /** The overload gate's limit changed: the UDP front applies it from now on. */
  overloadChanged(): void {
    const gate = this.deps.overload?.gate?.();
    if (!gate) return;
    this.ua.udpFront?.publish(gate);
    if (this.#frontPolicy) setFrontCap(this.#frontPolicy, gate.platformMaxCps);
  }

  /** New INVITEs the UDP front refused so far (0 without a front). */
  get frontRefusals(): number {
    return this.ua.udpFront?.refused ?? 0;
  }

  /**
   * The UDP front (sip/stack/transport/udp-front.ts): the platform's policy (front-policy.js: never refuses an
   * emergency call, holds the platform cap), and each INVITE it refuses counts towards the sender's flood limit as
   * if the main thread had seen it.
   */
  #frontOptions() {
    const security = this.deps.security;
    const data = frontPolicyData([
      ...BUILT_IN_EMERGENCY_NUMBERS,
      ...(this.deps.config.numbers?.emergencyNumbers ?? []),
    ]);
    this.#frontPolicy = data;
    return {
      onError: (err: Error) => this.#log.error({ err }, 'the UDP front stopped: SIP over UDP is received without it'),
      policy: { module: FRONT_POLICY_MODULE, data },
      onRefused: (address: string, count: number, userAgent: string | undefined) => {
        for (let i = 0; i < count; i++)
          security?.inspect({ source: address, transport: 'UDP', method: 'INVITE', userAgent });
      },
    };
  }

  /** A trunk's upstream registration changed: logged and stored for `simu trunks list`. */
  #registrationChanged(c: RegistrationChange): void {
    this.#log.info({ trunk: c.trunk.name, registration: c.state, seconds: c.seconds, status: c.status }, 'upstream');
    void setTrunkRegistration(this.deps.db, c.trunk.id, c.state).catch(() => undefined);
  }

  /** A trunk went up or down: logged and stored for `simu trunks list` (the engine streams it to staff). */
  #trunkChanged(c: TrunkStateChange): void {
    this.#log.warn({ trunk: c.trunk.name, health: c.health, cause: c.cause }, `trunk ${c.trunk.name} is ${c.health}`);
    void setTrunkHealth(this.deps.db, c.trunk.id, c.health).catch((e: unknown) =>
      this.#log.warn({ err: e, trunk: c.trunk.name }, 'trunk health could not be stored'),
    );
  }

  async #invite(req: SipRequest, srv: Responder): Promise<void> {
    if (!this.#onInvite) return void srv.send(503, 'Service Unavailable');
    // Overload control (overload/) before any store work: the excess is refused at once so the calls
    // already admitted keep their latency. Only new calls reach here (in-dialog requests go to their dialog), and
    // a re-INVITE that lost its dialog carries a To tag: it is never shed.
    const exempt = req.toTag !== undefined || this.#isEmergency(req); // emergency calls are never shed either
    // One the UDP front admitted is counted (and takes a token from the REST and TCP side's bucket), not asked again.
    if (!exempt && req.source?.gated) this.deps.overload?.noteAdmitted?.();
    const load = exempt || req.source?.gated ? undefined : this.deps.overload?.admitNewCall();
    if (load && !load.ok)
      return void srv.send(503, 'Service Unavailable', { headers: { 'Retry-After': String(load.retryAfterSeconds) } });
    // What the box completes is what it carries: the gate hears when an admitted call's set-up is over.
    const gate = this.deps.overload;
    if (!exempt && gate?.noteCompleted) srv.onFinalResponse(() => gate.noteCompleted!());
    // A leg from another node: whatever its source (nodes may share an address with a carrier), the engine checks it.
    const fromNode = req.headers.get(NODE_LEG_HEADER);
    if (fromNode !== undefined && req.toTag === undefined)
      return this.#handOver(req, srv, { kind: 'node', nodeId: fromNode });
    // Through a trusted front, the carrier is the sender the front reports (sip/front.ts).
    const source = this.front.origin(req).address;
    // An INVITE to a trunk's registered Contact is that trunk's, whatever its source; else by source address.
    const trunk = this.upstream.claim(req) ?? (await this.trunks.matchSource(source));
    let origin: InviteOrigin;
    if (
      trunk &&
      (req.source?.transport === 'UDP' || req.source?.transport === 'TCP' || req.source?.transport === 'TLS')
    ) {
      origin = { kind: 'trunk', trunk };
    } else {
      if (!this.#authenticate) return void srv.send(403, 'Forbidden');
      const identity = await this.#authenticate(req, srv);
      if (!identity) return; // challenged or refused by the authenticator
      origin = { kind: 'end-user', identity };
    }
    await this.#handOver(req, srv, origin);
  }

  async #handOver(req: SipRequest, srv: Responder, origin: InviteOrigin): Promise<void> {
    try {
      await this.#onInvite!(req, srv, origin);
    } catch (e) {
      this.#log.error({ err: e, callId: req.headers.get('call-id') }, 'INVITE handler failed');
      srv.send(500, 'Server Internal Error');
    }
  }

  /** An INVITE to an emergency number (numbers/: 112, 999, 911, numbers.emergencyNumbers). */
  #isEmergency(req: SipRequest): boolean {
    const user = (req.uri as { user?: string }).user ?? '';
    return user.length <= 16 && isEmergencyNumber(user, this.deps.config.numbers?.emergencyNumbers);
  }

  async close(): Promise<void> {
    clearInterval(this.#trustedTimer);
    clearInterval(this.#bansTimer);
    this.mwi.close();
    this.trunkHealth.stop();
    await this.upstream.close();
    await this.ua.close();
    await this.deps.security?.close();
  }
}
