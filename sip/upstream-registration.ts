import { randomBytes } from 'node:crypto';
import { systemClock, TypedEmitter, type Clock, type TimerHandle } from '../kit/index.js';
import type { TrunkRegistrationState, TrunkRow } from '../store/index.js';
import type { SipRequest, SipResponse, SipUri, Uri, UserAgent } from './stack/index.js';

const isSipUri = (u: Uri): u is SipUri => u.scheme === 'sip' || u.scheme === 'sips';

/** A trunk's registration changed state (stored for `simu trunks list`). */
export interface RegistrationChange {
  trunk: Pick<TrunkRow, 'id' | 'name'>;
  state: TrunkRegistrationState;
  /** Seconds the carrier granted (registered) or until the next try (failed). */
  seconds?: number;
  status?: number;
}

interface Binding {
  trunk: TrunkRow;
  /** The user part of the Contact we register: INVITEs to it are this trunk's calls. */
  token: string;
  callId: string;
  cseq: number;
  state: TrunkRegistrationState;
  failures: number;
  timer: TimerHandle | undefined;
  stopped: boolean;
}

/** Back-off after a failed REGISTER: 5 s, doubling, at most 5 minutes. */
export const REGISTER_BACKOFF = { firstSeconds: 5, maxSeconds: 300 };
/** How long a REGISTER may go unanswered before it counts as failed. */
const REGISTER_WAIT_MS = 10_000;

/**
 * Upstream registration: a trunk with `register` on REGISTERs to its carrier with its username
 * and password (digest, RFC 3261 §22), the Contact a random per-trunk user at our address; it refreshes at half
 * the granted time and, on failure, retries with back-off. An INVITE whose Request-URI user is that Contact's is
 * an inbound call of the trunk, whatever address it comes from (SipApplication asks `trunkFor`).
 */
export class UpstreamRegistrations extends TypedEmitter<{ change: [RegistrationChange] }> {
  readonly #bindings = new Map<string, Binding>();
  readonly #byToken = new Map<string, Binding>();

  constructor(
    private readonly ua: UserAgent,
    private readonly clock: Clock = systemClock,
  ) {
    super();
  }

  /** Starts registering trunks that should be and stops those that no longer should (called every few seconds). */
  sync(trunks: readonly TrunkRow[]): void {
    const wanted = new Map(
      trunks.filter((t) => t.is_active && t.register && t.username && t.password).map((t) => [t.id, t]),
    );
    for (const [id, b] of this.#bindings) {
      const t = wanted.get(id);
      if (!t || t.host !== b.trunk.host || t.port !== b.trunk.port || t.username !== b.trunk.username) this.#stop(b);
      else b.trunk = t; // a changed password or expiry is used at the next refresh
    }
    for (const t of wanted.values()) if (!this.#bindings.has(t.id)) this.#start(t);
  }

  /**
   * The trunk whose registered Contact an INVITE is addressed to, if any. Its Request-URI user is then our
   * Contact's, not the number called: that is in the To header (how carriers deliver to a registered contact),
   * so the Request-URI user is replaced by the To user for the inbound flow, which reads the DID from it.
   */
  claim(req: SipRequest): TrunkRow | undefined {
    const uri = req.uri;
    const b = isSipUri(uri) && uri.user ? this.#byToken.get(uri.user) : undefined;
    if (!b || b.state !== 'registered' || !isSipUri(uri)) return undefined;
    const to = /<?(?:sips?|tel):([^@;>]{1,32})/i.exec(req.headers.get('to') ?? '')?.[1];
    if (to && /^\+?[\d%-]+$/.test(to)) uri.user = to;
    return b.trunk;
  }

  state(trunkId: string): TrunkRegistrationState {
    return this.#bindings.get(trunkId)?.state ?? 'none';
  }

  /** Stops every registration (REGISTER with Expires: 0, best effort). */
  async close(): Promise<void> {
    await Promise.all([...this.#bindings.values()].map((b) => this.#stop(b)));
  }

  #start(trunk: TrunkRow): void {
    const b: Binding = {
      trunk,
      token: `simu-${randomBytes(8).toString('hex')}`,
      callId: `${randomBytes(12).toString('hex')}@simu`,
      cseq: 0,
      state: 'none',
      failures: 0,
      timer: undefined,
      stopped: false,
    };
    this.#bindings.set(trunk.id, b);
    this.#byToken.set(b.token, b);
    this.#set(b, 'registering');
    void this.#register(b);
  }

  async #stop(b: Binding): Promise<void> {
    b.stopped = true;
    if (b.timer) this.clock.clearTimeout(b.timer);
    this.#bindings.delete(b.trunk.id);
    this.#byToken.delete(b.token);
    if (b.state === 'registered') await this.#send(b, 0).catch(() => undefined);
    this.#set(b, 'none');
  }

  async #register(b: Binding): Promise<void> {
    if (b.stopped) return;
    let res: SipResponse | undefined;
    try {
      res = await this.#send(b, b.trunk.register_expires);
    } catch {
      res = undefined;
    }
    if (b.stopped) return;
    if (res && res.status >= 200 && res.status < 300) {
      // Bounded: a registrar's huge grant must not overflow the timer (2^31 ms fires at once, a REGISTER loop).
      const granted = Math.min(86_400, grantedSeconds(res, b.token) ?? b.trunk.register_expires);
      b.failures = 0;
      this.#set(b, 'registered', { seconds: granted, status: res.status });
      this.#after(b, Math.max(1, Math.floor(granted / 2)));
      return;
    }
    b.failures++;
    const wait = Math.min(REGISTER_BACKOFF.maxSeconds, REGISTER_BACKOFF.firstSeconds * 2 ** (b.failures - 1));
    this.#set(b, 'failed', { seconds: wait, status: res?.status });
    this.#after(b, wait);
  }

  #after(b: Binding, seconds: number): void {
    b.timer = this.clock.setTimeout(() => void this.#register(b), seconds * 1000);
  }

  /** One REGISTER (and its digest retry inside ua.request); same Call-ID, rising CSeq (RFC 3261 §10.2.4). */
  #send(b: Binding, expires: number): Promise<SipResponse> {
    const t = b.trunk;
    const hostPort = `${t.host}:${t.port}`;
    const aor = `<sip:${t.username}@${t.host}>`;
    const contact = this.ua.contact(t.transport === 'udp' ? 'UDP' : t.transport === 'tcp' ? 'TCP' : 'TLS');
    b.cseq += 2; // the digest retry takes the next number
    const sent = this.ua.request(`sip:${hostPort}`, {
      method: 'REGISTER',
      from: aor,
      to: aor,
      proxy: `${hostPort};transport=${t.transport}`,
      auth: { username: t.username!, password: t.password! },
      headers: {
        'Call-ID': b.callId,
        CSeq: `${b.cseq} REGISTER`,
        Contact: contact.replace('<sip:', `<sip:${b.token}@`),
        Expires: String(expires),
      },
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('REGISTER unanswered')), REGISTER_WAIT_MS);
    });
    return Promise.race([sent, late]).finally(() => clearTimeout(timer));
  }

  #set(b: Binding, state: TrunkRegistrationState, extra: { seconds?: number; status?: number } = {}): void {
    const changed = b.state !== state;
    b.state = state;
    if (changed || state === 'failed') this.safeEmit('change', { trunk: b.trunk, state, ...extra });
  }
}

/** The expiry the registrar granted our Contact: its `expires` parameter, else the Expires header. */
function grantedSeconds(res: SipResponse, token: string): number | undefined {
  for (const c of res.headers.getAll('contact')) {
    if (!c.includes(`${token}@`)) continue;
    const m = /;\s*expires\s*=\s*(\d{1,7})/i.exec(c);
    if (m) return Number(m[1]);
  }
  const e = /^\s*(\d{1,7})/.exec(res.headers.get('expires') ?? '');
  return e ? Number(e[1]) : undefined;
}
