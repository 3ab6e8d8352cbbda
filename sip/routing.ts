import { CURRENCY, formatMoney } from '../billing/index.js';
import type { RouteRow, TrunkRow } from '../store/index.js';

/** The prefix of the emergency route: not digits, so no dialled number ever falls under it. */
export const EMERGENCY_PREFIX = 'emergency';

/** A per-minute rate as a person reads it, in the currency the CLI takes: `1.20 KES/min`. */
export function perMinute(cents: number): string {
  return `${formatMoney(cents)} ${CURRENCY}/min`;
}

/**
 * One way a number may be carried, in the order it would be tried, with the reason it sits there (`why`, read by
 * people: `simu routes test`, the route.attempt event; rates in KES).
 */
export interface PlannedRoute {
  route: RouteRow | undefined;
  trunk: TrunkRow;
  why: string;
}

/** A route that covers the number but is not tried, and why. */
export interface SkippedRoute {
  route: RouteRow;
  trunk: TrunkRow | undefined;
  reason: 'trunk-inactive' | 'trunk-down' | 'loss-making' | 'trunk-repeated';
  why: string;
}

export interface RoutePlan {
  tried: PlannedRoute[];
  skipped: SkippedRoute[];
}

export interface PlanOptions {
  /** The destination's sell rate (the `rates` table) in cents per minute; undefined when none is known. */
  sellRateCents?: number;
  /** Loss-making routes (buy rate above the sell rate) are kept (setting routing.allowLossMaking). */
  allowLossMaking: boolean;
  /** The trunks by id (active or not). */
  trunks: ReadonlyMap<string, TrunkRow>;
  /** False while a trunk is down (OPTIONS unanswered, or a 503 Retry-After is running). */
  isUp: (trunkId: string) => boolean;
  /** Uniform in [0, 1); injected so tests can fix the weighted draw. */
  random?: () => number;
}

/**
 * The routes table in memory: one hash map from prefix to its routes, and the distinct prefix lengths, longest
 * first. Finding every prefix of a number is one map lookup per distinct length (at most 16 for digits), however
 * many routes there are. One flat map keeps the heap small (a trie of Maps has 3 nodes per prefix, which the
 * garbage collector must walk). Immutable: a change
 * of the table builds a new one.
 */
export class RouteTable {
  readonly #byPrefix = new Map<string, RouteRow[]>();
  readonly #lengths: number[];
  readonly size: number;

  constructor(routes: readonly RouteRow[]) {
    for (const r of routes) {
      const list = this.#byPrefix.get(r.prefix);
      if (list) list.push(r);
      else this.#byPrefix.set(r.prefix, [r]);
    }
    this.#lengths = [...new Set([...this.#byPrefix.keys()].map((p) => p.length))].sort((a, b) => b - a);
    this.size = routes.length;
  }

  /** The routes whose prefix begins `key`, longest prefix first, one array per prefix. */
  matching(key: string): RouteRow[][] {
    const found: RouteRow[][] = [];
    for (const len of this.#lengths) {
      if (len > key.length) continue;
      const routes = this.#byPrefix.get(len === key.length ? key : key.slice(0, len));
      if (routes) found.push(routes);
    }
    return found;
  }

  /**
   * The order a destination's routes are tried in (docs/routing.md): longest prefix first; then priority (lower
   * first); among equal priority a weighted random draw when weights differ, the cheapest buy rate first when they
   * are equal (and to break ties). Routes of inactive or down trunks, routes dearer than the sell rate (unless
   * allowed) and a trunk already planned under a longer prefix are skipped, each with its reason.
   */
  plan(key: string, o: PlanOptions): RoutePlan {
    const tried: PlannedRoute[] = [];
    const skipped: SkippedRoute[] = [];
    const seen = new Set<string>();
    const random = o.random ?? Math.random;
    for (const group of this.matching(key)) {
      for (const { route, why } of orderGroup(group, random)) {
        const trunk = o.trunks.get(route.trunk_id);
        const skip = (reason: SkippedRoute['reason'], text: string) =>
          skipped.push({ route, trunk, reason, why: text });
        if (!trunk || !trunk.is_active) skip('trunk-inactive', 'the trunk is not active');
        else if (seen.has(trunk.id)) skip('trunk-repeated', 'the trunk is already tried under a longer prefix');
        else if (!o.isUp(trunk.id)) skip('trunk-down', 'the trunk is down');
        else if (!o.allowLossMaking && o.sellRateCents !== undefined && route.buy_rate_cents > o.sellRateCents)
          skip(
            'loss-making',
            `buy rate ${perMinute(route.buy_rate_cents)} > sell rate ${perMinute(o.sellRateCents)} (routing.allowLossMaking is off)`,
          );
        else {
          seen.add(trunk.id);
          tried.push({ route, trunk, why: `prefix '${route.prefix}', ${why}` });
        }
      }
    }
    return { tried, skipped };
  }
}

/** One prefix's routes in their order: priority, then weighted draw (or cheapest first when weights are equal). */
function orderGroup(group: readonly RouteRow[], random: () => number): Array<{ route: RouteRow; why: string }> {
  if (group.length === 1)
    return [{ route: group[0], why: `priority ${group[0].priority}, buy ${perMinute(group[0].buy_rate_cents)}` }];
  const byPriority = new Map<number, RouteRow[]>();
  for (const r of group) {
    const list = byPriority.get(r.priority);
    if (list) list.push(r);
    else byPriority.set(r.priority, [r]);
  }
  const out: Array<{ route: RouteRow; why: string }> = [];
  for (const priority of [...byPriority.keys()].sort((a, b) => a - b)) {
    const same = byPriority.get(priority)!;
    const cheapest = (a: RouteRow, b: RouteRow) => a.buy_rate_cents - b.buy_rate_cents;
    if (same.length === 1 || same.every((r) => r.weight === same[0].weight)) {
      const why = same.length === 1 ? '' : ', equal weights: cheapest first';
      for (const r of [...same].sort(cheapest))
        out.push({ route: r, why: `priority ${priority}${why}, buy ${perMinute(r.buy_rate_cents)}` });
      continue;
    }
    // Weighted random order without replacement (Efraimidis-Spirakis: key u^(1/w), largest first); weight 0 last.
    const total = same.reduce((s, r) => s + Math.max(0, r.weight), 0);
    const keyed = same.map((r) => ({ r, k: r.weight > 0 ? Math.pow(random(), 1 / r.weight) : -1 }));
    keyed.sort((a, b) => b.k - a.k || cheapest(a.r, b.r));
    for (const { r } of keyed) {
      const share = total > 0 ? Math.round((100 * Math.max(0, r.weight)) / total) : 0;
      out.push({
        route: r,
        why: `priority ${priority}, weight ${r.weight} (${share}% drawn first), buy ${perMinute(r.buy_rate_cents)}`,
      });
    }
  }
  return out;
}
