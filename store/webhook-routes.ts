import type { Db } from './db.js';

/**
 * Delivery health of one status-callback URL of an account (table `webhook_routes`): consecutive failures, and
 * whether delivery to it is disabled (events/outbox decides when; the portal re-enables).
 */
export interface WebhookRouteRow {
  account_id: string;
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

/** The account's routes, by URL. */
export async function listWebhookRoutes(db: Db, accountId: string): Promise<WebhookRouteRow[]> {
  return (await db('webhook_routes').where({ account_id: accountId }).orderBy('url')).map(normalise);
}

/** Re-enables a route and clears its failure count; false when the account has no such route. */
export async function enableWebhookRoute(db: Db, accountId: string, url: string, at: string): Promise<boolean> {
  const n = await db('webhook_routes')
    .where({ account_id: accountId, url })
    .update({ disabled: false, disabled_at: null, consecutive_failures: 0, updated_at: at });
  return n === 1;
}
