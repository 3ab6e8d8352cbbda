import { listTrunks, type Db, type TrunkRow } from '../store/index.js';

/** Where and how an outbound PSTN leg is sent: the carrier's address and, if it challenges us, our credentials. */
export interface TrunkRoute {
  trunk: TrunkRow;
  /** `host:port;transport=udp|tcp|tls`, the form UserAgent.createUAC takes as `proxy`. */
  outbound: string;
  requestUri: (e164: string) => string;
  auth?: { username: string; password: string };
}

/**
 * The carriers the operator configured (`simu trunks add`), read from the store and cached for a few seconds so
 * a CLI change reaches the running switch without a restart and without a query per SIP request.
 */
export class TrunkDirectory {
  #cache: { at: number; trunks: TrunkRow[] } | undefined;
  #loading: Promise<TrunkRow[]> | undefined;

  constructor(
    private readonly db: Db,
    private readonly ttlMs = 2000,
    private readonly now: () => number = Date.now,
  ) {}

  async #trunks(): Promise<TrunkRow[]> {
    if (this.#cache && this.now() - this.#cache.at < this.ttlMs) return this.#cache.trunks;
    this.#loading ??= listTrunks(this.db)
      .then((trunks) => {
        this.#cache = { at: this.now(), trunks: trunks.filter((t) => t.is_active) };
        return this.#cache.trunks;
      })
      .finally(() => (this.#loading = undefined));
    return this.#loading;
  }

  /** The trunk an inbound request came from, by its source address (exact address or CIDR), if any. */
  async matchSource(address: string): Promise<TrunkRow | undefined> {
    for (const t of await this.#trunks()) {
      if (t.inbound_addresses.some((a) => addressMatches(a, address))) return t;
    }
    return undefined;
  }

  /** Every carrier signalling address or range (the security gate exempts them from automatic bans). */
  async inboundAddresses(): Promise<string[]> {
    return (await this.#trunks()).flatMap((t) => t.inbound_addresses);
  }

  /** The hosts outbound calls are sent to (IPs or names; a name matches nothing in addressMatches). */
  async hosts(): Promise<string[]> {
    return (await this.#trunks()).map((t) => t.host);
  }

  /** True when the address belongs to a carrier (exempt from flood bans). */
  async isCarrierAddress(address: string): Promise<boolean> {
    return (await this.matchSource(address)) !== undefined;
  }

  /** The route for an outbound PSTN call: the first active trunk (by name). */
  async outboundRoute(): Promise<TrunkRoute | undefined> {
    const [trunk] = await this.#trunks();
    if (!trunk) return undefined;
    const hostPort = `${trunk.host}:${trunk.port}`;
    return {
      trunk,
      outbound: `${hostPort};transport=${trunk.transport}`,
      requestUri: (e164) =>
        `sip:${e164}@${hostPort}${trunk.transport === 'udp' ? '' : `;transport=${trunk.transport}`}`,
      auth: trunk.username && trunk.password ? { username: trunk.username, password: trunk.password } : undefined,
    };
  }

  invalidate(): void {
    this.#cache = undefined;
  }
}

function ipv4ToInt(a: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(a);
  if (!m) return undefined;
  const parts = m.slice(1).map(Number);
  if (parts.some((p) => p > 255)) return undefined;
  return ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0;
}

/** `pattern` is an address or an IPv4 CIDR range; IPv4-mapped IPv6 sources (::ffff:a.b.c.d) match their IPv4. */
export function addressMatches(pattern: string, address: string): boolean {
  const addr = address.replace(/^::ffff:/i, '');
  const [net, bitsText] = pattern.split('/');
  if (bitsText === undefined) return net.toLowerCase() === addr.toLowerCase();
  const n = ipv4ToInt(net);
  const a = ipv4ToInt(addr);
  const bits = Number(bitsText);
  if (n === undefined || a === undefined || !(bits >= 0 && bits <= 32)) return false;
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return (n & mask) === (a & mask);
}
