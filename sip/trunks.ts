import { RateBook, type RateCard } from '../billing/index.js';
import { numberForTrunk } from '../numbers/index.js';
import { listRoutes, listTrunks, routesVersion, type Db, type TrunkRow } from '../store/index.js';
import { EMERGENCY_PREFIX, RouteTable, type PlannedRoute, type RoutePlan } from './routing.js';
import type { TrunkHealth } from './trunk-health.js';
import { systemClock, type Clock } from '../kit/index.js';

/** Where and how an outbound PSTN leg is sent: the carrier's address and, if it challenges us, our credentials. */
export interface TrunkRoute {
  trunk: TrunkRow;
  /** `host:port;transport=udp|tcp|tls`, the form UserAgent.createUAC takes as `proxy`. */
  outbound: string;
  requestUri: (e164: string) => string;
  auth?: { username: string; password: string };
  /** Why this trunk is where it is in the order (`simu routes test`, the attempt events). */
  why: string;
  /** The route's buy rate in cents per minute (undefined without a routes table). */
  buyRateCents?: number;
}

/** The trunks an outbound call would try, in order, and the routes that cover it but are skipped. */
export interface OutboundPlan {
  targets: TrunkRoute[];
  skipped: RoutePlan['skipped'];
  /** The destination's sell rate in cents per minute, when a rate covers it. */
  sellRateCents?: number;
}

export interface TrunkDirectoryOptions {
  ttlMs?: number;
  clock?: Pick<Clock, 'now'>;
  /** Keep routes whose buy rate is above the destination's sell rate (routing.allowLossMaking). */
  allowLossMaking?: boolean;
  /** Trunk health (OPTIONS pings, Retry-After holds); without it every active trunk counts as up. */
  health?: Pick<TrunkHealth, 'isUp'>;
  /** The sell rates; default a RateBook of `db`. */
  rates?: Pick<RateBook, 'card'>;
  /** Uniform random in [0, 1) for the weighted draw (tests fix it). */
  random?: () => number;
}

interface TrunkCache {
  at: number;
  all: TrunkRow[];
  trunks: TrunkRow[];
  byId: Map<string, TrunkRow>;
}

/** A trunk as a target of an outbound leg. */
export function trunkTarget(trunk: TrunkRow, why: string, buyRateCents?: number): TrunkRoute {
  const hostPort = `${trunk.host}:${trunk.port}`;
  return {
    trunk,
    outbound: `${hostPort};transport=${trunk.transport}`,
    // The number in the form this trunk wants (numbers/: E.164 by default, national, or a tech prefix; a `#` in it
    // is escaped, RFC 3261 §25.1 user part).
    requestUri: (e164) =>
      `sip:${userPart(numberForTrunk(e164, trunk.number_format))}@${hostPort}${trunk.transport === 'udp' ? '' : `;transport=${trunk.transport}`}`,
    auth: trunk.username && trunk.password ? { username: trunk.username, password: trunk.password } : undefined,
    why,
    buyRateCents,
  };
}

/**
 * The carriers the operator configured (`simu trunks add`) and the routes table (`simu routes add`), read from the
 * store and kept in memory: trunks for a few seconds, routes until their version (bumped by every change) moves,
 * checked at most every `ttlMs` and in the background, so a CLI change reaches the running switch without a
 * restart and no call waits on a query (after the first load).
 */
export class TrunkDirectory {
  #cache: TrunkCache | undefined;
  #loading: Promise<TrunkRow[]> | undefined;
  #routes: { table: RouteTable; version: string; checkedAt: number } | undefined;
  #routesLoading: Promise<RouteTable> | undefined;
  readonly #ttlMs: number;
  readonly #clock: Pick<Clock, 'now'>;
  readonly #rates: Pick<RateBook, 'card'>;
  health: Pick<TrunkHealth, 'isUp'> | undefined;

  constructor(
    private readonly db: Db,
    private readonly opts: TrunkDirectoryOptions = {},
  ) {
    this.#ttlMs = opts.ttlMs ?? 2000;
    this.#clock = opts.clock ?? systemClock;
    this.#rates = opts.rates ?? new RateBook(db);
    this.health = opts.health;
  }

  async #load(): Promise<TrunkCache> {
    if (this.#cache && this.#clock.now() - this.#cache.at < this.#ttlMs) return this.#cache;
    this.#loading ??= listTrunks(this.db)
      .then((all) => {
        this.#cache = {
          at: this.#clock.now(),
          all,
          trunks: all.filter((t) => t.is_active),
          byId: new Map(all.map((t) => [t.id, t])),
        };
        return this.#cache.trunks;
      })
      .finally(() => (this.#loading = undefined));
    await this.#loading;
    return this.#cache!;
  }

  async #trunks(): Promise<TrunkRow[]> {
    return (await this.#load()).trunks;
  }

  /** Every trunk, active or not (health pings, upstream registration). */
  async all(): Promise<TrunkRow[]> {
    return (await this.#load()).all;
  }

  /** The routes table: loaded once, then reloaded in the background when its version changes. */
  async #table(): Promise<RouteTable> {
    const r = this.#routes;
    if (r && this.#clock.now() - r.checkedAt < this.#ttlMs) return r.table;
    if (r) {
      r.checkedAt = this.#clock.now();
      void routesVersion(this.db)
        .then((v) => (v === r.version ? undefined : this.#reloadRoutes()))
        .catch(() => undefined);
      return r.table;
    }
    return this.#reloadRoutes();
  }

  #reloadRoutes(): Promise<RouteTable> {
    this.#routesLoading ??= (async () => {
      const version = await routesVersion(this.db);
      const table = new RouteTable(await listRoutes(this.db));
      this.#routes = { table, version, checkedAt: this.#clock.now() };
      return table;
    })().finally(() => (this.#routesLoading = undefined));
    return this.#routesLoading;
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

  /**
   * The trunks an outbound call to `e164` tries, in order (docs/routing.md). With no routes configured at all, the
   * first active trunk (by name) that is not down, as before routes existed. `emergency` plans the `emergency`
   * route (never skipped for its price), else the first trunk that is up.
   */
  async outboundPlan(e164: string, o: { emergency?: boolean } = {}): Promise<OutboundPlan> {
    const [{ byId, trunks }, table] = await Promise.all([this.#load(), this.#table()]);
    const isUp = (id: string) => this.health?.isUp(id) ?? true;
    const digits = e164.replace(/\D/g, '');
    const sellRateCents = o.emergency ? undefined : sellRate(await this.#rates.card().catch(() => undefined), digits);
    if (table.size === 0) return { targets: firstUp(trunks, isUp), skipped: [], sellRateCents };
    const plan = table.plan(o.emergency ? EMERGENCY_PREFIX : digits, {
      sellRateCents,
      allowLossMaking: o.emergency === true || this.opts.allowLossMaking === true,
      trunks: byId,
      isUp,
      random: this.opts.random,
    });
    const tried = o.emergency ? plan.tried.filter((p) => p.route?.prefix === EMERGENCY_PREFIX) : plan.tried;
    const targets = tried.map((p: PlannedRoute) => trunkTarget(p.trunk, p.why, p.route?.buy_rate_cents));
    if (o.emergency && targets.length === 0) targets.push(...firstUp(trunks, isUp));
    return { targets, skipped: plan.skipped, sellRateCents };
  }

  /** Forgets the trunks and the routes table: the next use reads both again (after a change in this process). */
  invalidate(): void {
    this.#cache = undefined;
    this.#routes = undefined;
  }
}

const userPart = (n: string): string => n.replace(/#/g, '%23');

function firstUp(trunks: TrunkRow[], isUp: (id: string) => boolean): TrunkRoute[] {
  const t = trunks.find((x) => isUp(x.id));
  return t ? [trunkTarget(t, 'no routes configured: the first active trunk that is up')] : [];
}

function sellRate(card: RateCard | undefined, digits: string): number | undefined {
  try {
    return card?.perMinute('outbound', digits);
  } catch {
    return undefined; // no rate covers it: billing refuses the call, routing has nothing to compare with
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
