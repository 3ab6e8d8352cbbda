import type { Knex } from 'knex';

/**
 * The `iat` a phone token was signed with (epoch seconds), so the registrar rebuilds the exact JWT a phone uses
 * as its digest password instead of trying the two seconds around `created_at`. Null for tokens minted before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('phone_tokens', (t) => {
    t.bigInteger('issued_at');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('phone_tokens', (t) => {
    t.dropColumn('issued_at');
  });
}
