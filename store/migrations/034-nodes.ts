import type { Knex } from 'knex';

/**
 * The switch processes sharing this store (docs/architecture.md, "Several nodes"): one row a node, its heartbeat
 * written every few seconds; a node whose heartbeat stopped is marked gone by one survivor, which closes its calls.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('nodes', (t) => {
    t.string('id', 64).primary();
    t.string('state', 16).notNullable(); // up | draining | stopped | gone
    t.string('version', 40).notNullable();
    t.string('sip_address', 120).notNullable();
    t.string('http_address', 120).notNullable();
    t.integer('pid').notNullable();
    t.integer('live_calls').notNullable().defaultTo(0);
    t.string('started_at', 32).notNullable();
    t.string('heartbeat_at', 32).notNullable();
    t.string('gone_at', 32);
    t.string('gone_by', 64); // the survivor that closed its calls
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('nodes');
}
