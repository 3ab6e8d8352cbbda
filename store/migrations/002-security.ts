import type { Knex } from 'knex';

/**
 * Bans of SIP source addresses (sip/security): flood, authentication abuse and scanners. One row per address, so a
 * re-ban replaces the old row. Timestamps are ISO-8601 UTC text like the rest of the schema, so `expires_at > now`
 * compares the same way on SQLite and PostgreSQL.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('ip_bans', (t) => {
    t.string('address', 64).primary();
    t.string('reason', 32).notNullable(); // flood | auth-failures | scanner | operator
    t.string('banned_at', 32).notNullable();
    t.string('expires_at', 32).notNullable();
    t.bigInteger('hits').notNullable().defaultTo(0); // requests dropped while banned
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('ip_bans');
}
