import type { Knex } from 'knex';

/**
 * Conference and queue rooms across nodes (docs/architecture.md, "Several nodes"): one row a live room, naming the
 * node that holds it, so callers of one room arriving on any node reach the same one; and the secret nodes sign
 * their legs to each other with, made by the first node that needs it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('room_leases', (t) => {
    t.string('kind', 16).notNullable(); // conference | queue
    t.string('account_id', 36).notNullable();
    t.string('name', 200).notNullable();
    t.string('node_id', 64).notNullable().index();
    t.string('taken_at', 32).notNullable();
    t.primary(['kind', 'account_id', 'name']);
  });
  await knex.schema.createTable('node_secrets', (t) => {
    t.string('purpose', 32).primary();
    t.string('secret', 100).notNullable();
    t.string('created_at', 32).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('node_secrets');
  await knex.schema.dropTable('room_leases');
}
