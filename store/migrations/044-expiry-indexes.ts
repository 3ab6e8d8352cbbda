import type { Knex } from 'knex';

/**
 * The housekeeping sweep (store/housekeeping.ts) deletes idempotency keys and media-stream tokens past their expiry:
 * an index on each expiry, so the sweep reads only the expired rows.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.index(['expires_at'], 'idempotency_keys_expires');
  });
  await knex.schema.alterTable('stream_tokens', (t) => {
    t.index(['expires_at'], 'stream_tokens_expires');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('stream_tokens', (t) => {
    t.dropIndex(['expires_at'], 'stream_tokens_expires');
  });
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.dropIndex(['expires_at'], 'idempotency_keys_expires');
  });
}
