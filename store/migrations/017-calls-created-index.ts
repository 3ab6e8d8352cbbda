import type { Knex } from 'knex';

/** `simu cdr export` reads every account's CDRs by creation time, in keyset pages on (created_at, id). */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('calls', (t) => {
    t.index(['created_at', 'id'], 'calls_created_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('calls', (t) => {
    t.dropIndex(['created_at', 'id'], 'calls_created_id');
  });
}
