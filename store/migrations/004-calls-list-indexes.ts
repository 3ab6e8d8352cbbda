import type { Knex } from 'knex';

/**
 * Covering indexes for the calls list (newest first, ties by id): the page's ids are read from the index alone,
 * so a deep offset skips index entries instead of table rows. They replace 001's (account_id, [status|direction,]
 * created_at) indexes, which are their prefixes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('calls', (t) => {
    t.index(['account_id', 'created_at', 'id'], 'calls_account_created_id');
    t.index(['account_id', 'status', 'created_at', 'id'], 'calls_account_status_created_id');
    t.index(['account_id', 'direction', 'created_at', 'id'], 'calls_account_direction_created_id');
  });
  await knex.schema.alterTable('calls', (t) => {
    t.dropIndex(['account_id', 'created_at']);
    t.dropIndex(['account_id', 'status', 'created_at']);
    t.dropIndex(['account_id', 'direction', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('calls', (t) => {
    t.index(['account_id', 'created_at']);
    t.index(['account_id', 'status', 'created_at']);
    t.index(['account_id', 'direction', 'created_at']);
  });
  await knex.schema.alterTable('calls', (t) => {
    t.dropIndex([], 'calls_account_created_id');
    t.dropIndex([], 'calls_account_status_created_id');
    t.dropIndex([], 'calls_account_direction_created_id');
  });
}
