import type { Knex } from 'knex';

/**
 * The HTTP status a status callback was delivered with, on its outbox row: a delivery's WH.0200 is read from the
 * delivered row (store/call-events.ts) instead of being stored as a call event of its own. Rows delivered before
 * have none and keep their stored WH.0200.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('event_outbox', (t) => {
    t.integer('reply_status').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('event_outbox', (t) => {
    t.dropColumn('reply_status');
  });
}
