import type { Knex } from 'knex';

/**
 * The outbox delivers a call's callbacks in order: a row is due only when no earlier row of the same call is still
 * pending (events/outbox.ts, a NOT EXISTS on call_id, state and id). This index answers that probe directly.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('event_outbox', (t) => {
    t.index(['call_id', 'state', 'id'], 'event_outbox_call_order');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('event_outbox', (t) => {
    t.dropIndex(['call_id', 'state', 'id'], 'event_outbox_call_order');
  });
}
