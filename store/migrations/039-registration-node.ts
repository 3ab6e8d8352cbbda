import type { Knex } from 'knex';

/**
 * Registrations across nodes (docs/architecture.md, "Several nodes"): each kept binding names the node that took
 * its REGISTER (and holds its connection, for TCP, TLS and WebSocket) and its transport; stream bindings are kept
 * too now, so the store says where every phone is. A binding whose node is declared gone while it holds the
 * phone's connection is marked unreachable until the phone registers again. The index serves another node's
 * look-up of an extension.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('registrations', (t) => {
    t.string('node_id', 64);
    t.string('transport', 8).notNullable().defaultTo('UDP');
    t.string('unreachable_at', 32);
    t.index(['account_id', 'extension']);
    t.index(['node_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('registrations', (t) => {
    t.dropIndex(['account_id', 'extension']);
    t.dropIndex(['node_id']);
    t.dropColumn('node_id');
    t.dropColumn('transport');
    t.dropColumn('unreachable_at');
  });
}
