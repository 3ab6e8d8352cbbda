import type { Knex } from 'knex';

/**
 * The operator console:
 * - `operators`: people who may sign in to /console/ (never an account's credentials): email, scrypt password,
 *   RFC 6238 secret and the last accepted time step (a code is spent once), as portal_users does for accounts.
 * - `operator_audit`: every operator action, from the console or the CLI (who, what, on what, when, outcome).
 * - `wallet_transactions.reason`: why an operator moved money (a top-up's reason is kept in the ledger).
 * - `call_stats_hourly` / `call_dest_daily`: CDRs rolled up per account and hour (and per destination prefix and
 *   day) by a periodic job reading ended calls, so the charts stay fast at millions of CDRs without any write on a
 *   call's own path.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('operators', (t) => {
    t.string('id', 36).primary();
    t.string('email', 320).notNullable().unique();
    t.text('password_hash').notNullable();
    t.string('totp_secret', 64).notNullable();
    t.bigInteger('totp_last_step').notNullable().defaultTo(0);
    t.string('created_at', 32).notNullable();
  });
  await knex.schema.createTable('operator_audit', (t) => {
    t.string('id', 36).primary();
    t.string('at', 32).notNullable();
    t.string('actor', 340).notNullable(); // operator:EMAIL or cli:USER
    t.string('action', 64).notNullable(); // e.g. account.suspend
    t.string('target', 200).notNullable().defaultTo('');
    t.text('detail').notNullable().defaultTo('{}'); // JSON
    t.boolean('ok').notNullable().defaultTo(true);
    t.index(['at', 'id'], 'operator_audit_at');
  });
  await knex.schema.alterTable('wallet_transactions', (t) => {
    t.string('reason', 500);
  });
  await knex.schema.createTable('call_stats_hourly', (t) => {
    t.string('account_id', 36).notNullable();
    t.string('hour', 13).notNullable(); // YYYY-MM-DDTHH (UTC), of created_at
    t.string('direction', 16).notNullable();
    t.integer('calls').notNullable();
    t.integer('answered').notNullable();
    t.bigInteger('talk_seconds').notNullable();
    t.bigInteger('cost_cents').notNullable();
    t.primary(['account_id', 'hour', 'direction']);
    t.index(['hour'], 'call_stats_hourly_hour');
  });
  await knex.schema.createTable('call_dest_daily', (t) => {
    t.string('account_id', 36).notNullable();
    t.string('day', 10).notNullable(); // YYYY-MM-DD (UTC)
    t.string('prefix', 8).notNullable(); // the first digits of an outbound call's number, '+' included
    t.integer('calls').notNullable();
    t.integer('answered').notNullable();
    t.bigInteger('cost_cents').notNullable();
    t.primary(['account_id', 'day', 'prefix']);
    t.index(['day'], 'call_dest_daily_day');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('call_dest_daily');
  await knex.schema.dropTableIfExists('call_stats_hourly');
  await knex.schema.alterTable('wallet_transactions', (t) => t.dropColumn('reason'));
  await knex.schema.dropTableIfExists('operator_audit');
  await knex.schema.dropTableIfExists('operators');
}
