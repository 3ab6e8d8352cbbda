import type { Knex } from 'knex';

/**
 * The outbox's indexes stop naming `state`, so marking a row delivered moves no index entry:
 * - Due rows are found through `event_outbox_due` (next_attempt_at), over pending rows only: a row leaves it when
 *   it is delivered or fails (one entry deleted), and enters no other index then.
 * - A call's rows, for its order and for listing its deliveries, through `event_outbox_call` (call_id, id), whose
 *   columns never change: the order check reads each earlier row's state from the table (a few dozen at most).
 * - Failed rows, for the failure charts, through `event_outbox_failed` (done_at) over failed rows only (rare).
 * - Finished rows are purged by id range (ids are UUIDv7, time-ordered), through the primary key.
 * Replaces (state, next_attempt_at) and (call_id, state, id). Rows are kept as they are; pending ones are due
 * through the new index as before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('event_outbox', (t) => {
    t.dropIndex(['state', 'next_attempt_at']);
    t.dropIndex(['call_id', 'state', 'id'], 'event_outbox_call_order');
  });
  await knex.raw(`create index "event_outbox_due" on "event_outbox" ("next_attempt_at") where "state" = 'pending'`);
  await knex.raw(`create index "event_outbox_call" on "event_outbox" ("call_id", "id")`);
  await knex.raw(`create index "event_outbox_failed" on "event_outbox" ("done_at") where "state" = 'failed'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index "event_outbox_failed"');
  await knex.raw('drop index "event_outbox_call"');
  await knex.raw('drop index "event_outbox_due"');
  await knex.schema.alterTable('event_outbox', (t) => {
    t.index(['state', 'next_attempt_at']);
    t.index(['call_id', 'state', 'id'], 'event_outbox_call_order');
  });
}
