import type { Knex } from 'knex';

/**
 * The API key a stream token was minted with, so the event stream can close a socket when that key is revoked.
 * Null for staff tokens and for tokens minted before this column.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('stream_tokens', (t) => {
    t.string('api_key_id', 36);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('stream_tokens', (t) => {
    t.dropColumn('api_key_id');
  });
}
