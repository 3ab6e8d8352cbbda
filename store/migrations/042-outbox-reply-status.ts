import type { Knex } from 'knex';

/**
 * The status callbacks' outbox, lighter to write:
 * - The HTTP status a callback was delivered with, on its row: a delivery's WH.0200 is read from the delivered row
 *   (store/call-events.ts) instead of being stored as a call event of its own. Rows delivered before have none and
 *   keep their stored WH.0200.
 * - The node a row is leased to (`leased_by`): rows are queued already leased to the process that sends them, and a
 *   node starting again ends its earlier process's leases at once instead of waiting them out.
 * - No (call_id, created_at) index: a call's rows are found through (call_id, state, id), the lease's order index,
 *   and sorted (a few dozen at most); every queued callback wrote one more index entry for it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('event_outbox', (t) => {
    t.integer('reply_status').nullable();
    t.string('leased_by', 64).nullable();
  });
  await knex.schema.alterTable('event_outbox', (t) => {
    t.dropIndex(['call_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('event_outbox', (t) => {
    t.index(['call_id', 'created_at']);
  });
  await knex.schema.alterTable('event_outbox', (t) => {
    t.dropColumn('leased_by');
    t.dropColumn('reply_status');
  });
}
