import type { Knex } from 'knex';

/**
 * An index on `wallet_topups.ledger_id`: the wallet's transaction list shows each top-up row's provider receipt,
 * read by the ledger ids of the page it lists.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('wallet_topups', (t) => t.index(['ledger_id']));
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('wallet_topups', (t) => t.dropIndex(['ledger_id']));
}
