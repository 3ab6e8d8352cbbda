import type { Knex } from 'knex';

/**
 * Toll-fraud controls: per-account allowlists of destination prefixes (an account with any `allow` rule may only
 * reach numbers under one of them) and platform-wide block prefixes (account_id null; e.g. premium-rate ranges).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('destination_rules', (t) => {
    t.string('id', 36).primary();
    t.string('account_id', 36); // null: platform-wide
    t.string('kind', 8).notNullable(); // allow | block
    t.string('prefix', 16).notNullable(); // digits of the E.164 number, without '+'
    t.string('created_at', 32).notNullable();
    t.unique(['account_id', 'kind', 'prefix']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('destination_rules');
}
