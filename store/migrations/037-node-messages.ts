import type { Knex } from 'knex';

/**
 * Messages between nodes too large for a PostgreSQL NOTIFY payload (8,000 bytes): the body is stored here and the
 * notification carries its id (store/node-channel.ts). Rows are read by the receivers and deleted after a minute.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('node_messages', (t) => {
    t.string('id', 36).primary();
    t.text('body').notNullable();
    t.string('created_at', 32).notNullable().index();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('node_messages');
}
