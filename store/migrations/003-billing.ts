import type { Knex } from 'knex';

/**
 * Live credit state of answered calls (billing/credit-monitor): one row per call from answer until it is settled.
 * It lets the reconcile sweep bill a call whose process died (answered_at .. the last heartbeat the monitor
 * wrote, at the rate fixed at answer), and lets a watchdog in another process see whether the monitor guarding a
 * call is still alive (`heartbeat_at`). The row is deleted in the same transaction that settles the call.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('call_credit', (t) => {
    t.string('call_id', 36).primary();
    t.string('account_id', 36).notNullable();
    t.string('node_id', 64); // the monitor's node
    t.bigInteger('rate_cents_per_minute').notNullable(); // talk rate fixed at answer
    t.bigInteger('tts_cents').notNullable().defaultTo(0); // speech priced so far (at use)
    t.integer('tts_seconds').notNullable().defaultTo(0);
    t.string('answered_at', 32).notNullable();
    t.string('heartbeat_at', 32).notNullable(); // last time a live monitor vouched for the call
    t.index(['account_id']);
    t.index(['node_id', 'heartbeat_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('call_credit');
}
