import type { Knex } from 'knex';
import { requestUrl } from '../../kit/index.js';

/**
 * Status-route health is kept per route, not per URL (spec, States: "Webhook route (per
 * purpose)"). A route is where the status purpose was resolved: `status` (the account's status URL) or
 * `status:number:<number id>` (that number's status override), with the URL it had. Two routes that share one URL
 * now count their failures and are disabled apart.
 *
 * `webhook_routes` gains `route` in its primary key (account_id, route, url); `event_outbox` rows carry the route
 * they were queued for. Existing route rows were shared by every route with their URL, so each becomes the
 * account's `status` row and also the row of every number override of the account set to that URL: each route
 * keeps the state its URL had. Pending outbox rows of a call whose number overrides the status URL with the row's
 * URL get that number's route; every other row is the account's.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_routes_014', (t) => {
    t.string('account_id', 36).notNullable();
    t.string('route', 80).notNullable().defaultTo('status');
    t.text('url').notNullable();
    t.integer('consecutive_failures').notNullable().defaultTo(0);
    t.boolean('disabled').notNullable().defaultTo(false);
    t.string('disabled_at', 32);
    t.string('updated_at', 32).notNullable();
    t.primary(['account_id', 'route', 'url']);
  });
  const old = await knex('webhook_routes').select();
  const overrides = await knex('numbers')
    .select('id', 'account_id', 'webhook_status')
    .whereNotNull('account_id')
    .whereNot('webhook_status', '');
  for (const r of old) {
    const copy = { ...r, route: 'status' };
    await knex('webhook_routes_014').insert(copy);
    for (const n of overrides) {
      if (n.account_id === r.account_id && requestUrl(String(n.webhook_status)) === r.url)
        await knex('webhook_routes_014').insert({ ...copy, route: `status:number:${n.id}` });
    }
  }
  await knex.schema.dropTable('webhook_routes');
  await knex.schema.renameTable('webhook_routes_014', 'webhook_routes');

  await knex.schema.alterTable('event_outbox', (t) => {
    t.string('route', 80).notNullable().defaultTo('status');
  });
  const pending = await knex('event_outbox as o')
    .join('calls as c', 'c.id', 'o.call_id')
    .join('numbers as n', 'n.id', 'c.number_id')
    .where('o.state', 'pending')
    .whereNot('n.webhook_status', '')
    .select('o.id', 'o.url', 'n.id as number_id', 'n.webhook_status');
  for (const p of pending) {
    if (requestUrl(String(p.webhook_status)) === p.url)
      await knex('event_outbox')
        .where({ id: p.id })
        .update({ route: `status:number:${p.number_id}` });
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('event_outbox', (t) => {
    t.dropColumn('route');
  });
  await knex.schema.createTable('webhook_routes_013', (t) => {
    t.string('account_id', 36).notNullable();
    t.text('url').notNullable();
    t.integer('consecutive_failures').notNullable().defaultTo(0);
    t.boolean('disabled').notNullable().defaultTo(false);
    t.string('disabled_at', 32);
    t.string('updated_at', 32).notNullable();
    t.primary(['account_id', 'url']);
  });
  // Back to one row per URL: the account's own route where there is one, else any.
  const rows = await knex('webhook_routes').select().orderByRaw("case when route = 'status' then 0 else 1 end");
  const seen = new Set<string>();
  for (const { route: _route, ...r } of rows) {
    const k = `${r.account_id} ${r.url}`;
    if (seen.has(k)) continue;
    seen.add(k);
    await knex('webhook_routes_013').insert(r);
  }
  await knex.schema.dropTable('webhook_routes');
  await knex.schema.renameTable('webhook_routes_013', 'webhook_routes');
}
