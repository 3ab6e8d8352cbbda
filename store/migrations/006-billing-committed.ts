import type { Knex } from 'knex';

/**
 * What each live call has committed so far (billing/credit-monitor), written with its heartbeat. On several nodes
 * sharing one store, a node's monitor subtracts the other nodes' fresh committed amounts from an account's balance,
 * so live calls of one account on different nodes draw on one balance.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('call_credit', (t) => {
    t.bigInteger('committed_cents').notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('call_credit', (t) => {
    t.dropColumn('committed_cents');
  });
}
