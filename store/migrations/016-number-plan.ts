import type { Knex } from 'knex';

/**
 * Numbering: each account may have its own country for the national numbers its phones
 * dial (null: the platform's `numbers.defaultCountry`); each trunk the form it wants numbers in (null: E.164);
 * each call whether it was an emergency call (CDR flag, also in `simu cdr export`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('accounts', (t) => {
    t.string('country', 2);
  });
  await knex.schema.alterTable('trunks', (t) => {
    t.string('number_format', 32);
  });
  await knex.schema.alterTable('calls', (t) => {
    t.boolean('emergency').notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('calls', (t) => t.dropColumn('emergency'));
  await knex.schema.alterTable('trunks', (t) => t.dropColumn('number_format'));
  await knex.schema.alterTable('accounts', (t) => t.dropColumn('country'));
}
