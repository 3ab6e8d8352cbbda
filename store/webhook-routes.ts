import type { Db, Tx } from './db.js';
import { runSql, runSqlCount, selectRows } from './fixed-sql.js';
import { cachedRead } from './read-cache.js';

/** The account's own status route (its status URL, POST /api/account/webhooks with purpose `status`). */
export const ACCOUNT_STATUS_ROUTE = 'status';

/** The status route of one of the account's numbers (its `webhook_urls.status` override). */
export const numberStatusRoute = (numberId: string): string => `status:number:${numberId}`;

/**
 * Which route a status callback went by: `route` is where the status URL was resolved (ACCOUNT_STATUS_ROUTE or
 * numberStatusRoute), `url` the URL it had there, in its wire form. Health is kept per (account, route, url): two
 * routes sharing a URL count apart (spec, States: "Webhook route (per purpose)"), and a route set to another URL
 * starts a fresh row while the old one keeps its state.
 */
export interface RouteRef {
  route: string;
  url: string;
}

/**
 * Delivery health of one status route of an account (table `webhook_routes`): consecutive failures, and whether
 * delivery to it is disabled (events/outbox decides when; the portal re-enables).
 */
export interface WebhookRouteRow {
  account_id: string;
  route: string;
  url: string;
  consecutive_failures: number;
  disabled: boolean;
  disabled_at: string | null;
  updated_at: string;
}

const normalise = (r: any): WebhookRouteRow => ({
  ...r,
  consecutive_failures: Number(r.consecutive_failures),
  disabled: Boolean(r.disabled),
  disabled_at: r.disabled_at ?? null,
});

const KEY = '"account_id" = ? and "route" = ? and "url" = ?';
const key = (accountId: string, ref: RouteRef): string[] => [accountId, ref.route, ref.url];

/** The account's routes, by URL then route. */
export async function listWebhookRoutes(db: Db | Tx, accountId: string): Promise<WebhookRouteRow[]> {
  const rows = await selectRows(
    db,
    'select * from "webhook_routes" where "account_id" = ? order by "url" asc, "route" asc',
    [accountId],
  );
  return rows.map(normalise);
}

/** Re-enables a route and clears its failure count; false when the account has no such route. */
export async function enableWebhookRoute(db: Db | Tx, accountId: string, ref: RouteRef, at: string): Promise<boolean> {
  const n = await runSqlCount(
    db,
    `update "webhook_routes" set "disabled" = ?, "disabled_at" = ?, "consecutive_failures" = ?, "updated_at" = ? where ${KEY}`,
    [false, null, 0, at, ...key(accountId, ref)],
    'webhook_routes',
  );
  return n === 1;
}

export async function findWebhookRoute(
  db: Db | Tx,
  accountId: string,
  ref: RouteRef,
): Promise<WebhookRouteRow | undefined> {
  const [r] = await selectRows(db, `select * from "webhook_routes" where ${KEY} limit 1`, key(accountId, ref));
  return r ? normalise(r) : undefined;
}

/**
 * findWebhookRoute from the per-process read cache (store/read-cache.ts): every status callback reads its route's
 * health twice (queued, then attempted), and it changes only when a delivery fails for good or an operator acts.
 * Any write to webhook_routes through this store drops the cache; in the switch, another process's too. A
 * delivery therefore writes the route only when it has a failure count to reset. `db` is the root instance.
 */
export async function findWebhookRouteCached(
  db: Db,
  accountId: string,
  ref: RouteRef,
): Promise<WebhookRouteRow | undefined> {
  return cachedRead(db, 'webhook_routes', `${accountId}\n${ref.route}\n${ref.url}`, () =>
    findWebhookRoute(db, accountId, ref).then((r) => (r ? Object.freeze(r) : undefined)),
  );
}

const UPSERT =
  'insert into "webhook_routes" ("account_id", "route", "url", "consecutive_failures", "updated_at") ' +
  'values (?, ?, ?, ?, ?) on conflict ("account_id", "route", "url") do update set ';

/** A delivery succeeded: the route's failure count back to 0 (the route row is created if it was not there). */
export async function noteRouteDelivered(db: Db | Tx, accountId: string, ref: RouteRef, at: string): Promise<void> {
  await runSql(
    db,
    UPSERT + '"consecutive_failures" = excluded."consecutive_failures", "updated_at" = excluded."updated_at"',
    [...key(accountId, ref), 0, at],
    'webhook_routes',
  );
}

/**
 * noteRouteDelivered for a route whose row exists: the failure count back to 0 only if it is not 0 already (a
 * failure recorded since the caller read the route). Usually changes nothing and writes no page.
 */
export async function resetRouteFailures(db: Db | Tx, accountId: string, ref: RouteRef, at: string): Promise<void> {
  await runSql(
    db,
    `update "webhook_routes" set "consecutive_failures" = ?, "updated_at" = ? where ${KEY} and "consecutive_failures" > ?`,
    [0, at, ...key(accountId, ref), 0],
    'webhook_routes',
  );
}

/**
 * A delivery failed for good: the route's failure count goes up by one (created at 1), atomically; returns the row
 * after. Run it in the transaction that also decides on disabling, so the count read is the one written.
 */
export async function noteRouteFailed(
  db: Db | Tx,
  accountId: string,
  ref: RouteRef,
  at: string,
): Promise<WebhookRouteRow> {
  await runSql(
    db,
    UPSERT +
      '"consecutive_failures" = "webhook_routes"."consecutive_failures" + 1, "updated_at" = excluded."updated_at"',
    [...key(accountId, ref), 1, at],
    'webhook_routes',
  );
  return (await findWebhookRoute(db, accountId, ref))!;
}

/** Stops delivery to a route (auto-disable); re-enabling is enableWebhookRoute. */
export async function disableWebhookRoute(db: Db | Tx, accountId: string, ref: RouteRef, at: string): Promise<void> {
  await runSql(
    db,
    `update "webhook_routes" set "disabled" = ?, "disabled_at" = ? where ${KEY}`,
    [true, at, ...key(accountId, ref)],
    'webhook_routes',
  );
}
