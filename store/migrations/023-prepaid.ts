import type { Knex } from 'knex';

/**
 * The prepaid experience.
 *
 * - `topup_providers`: the mobile-money providers the operator trusts, each with the secret its callbacks are
 *   signed with (HMAC-SHA256 over the raw body; the secret is needed in clear to verify, like a webhook secret).
 * - `wallet_topups`: every accepted top-up callback (a payment or its reversal), with the provider's receipt. The
 *   unique (provider, receipt, kind) makes a duplicate credit once even when two deliveries race; the ledger row it
 *   posted carries the same receipt in its settlement key, so the two can be reconciled.
 * - accounts: the language the switch speaks to the account's callers (`en`, `sw`), the lead time of the
 *   "one minute left" notice (seconds, 0 = off), and the opt-in to the last known good call-control document.
 * - `last_good_documents`: per number, the last valid document its call-control webhook returned and when;
 *   `calls.served_from` is `last_good` on a call that ran one (the CDR says so).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('topup_providers', (t) => {
    t.string('name', 40).primary();
    t.string('secret', 128).notNullable();
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
  });
  await knex.schema.createTable('wallet_topups', (t) => {
    t.string('id', 36).primary();
    t.string('provider', 40).notNullable();
    t.string('receipt', 64).notNullable();
    t.string('kind', 12).notNullable(); // payment | reversal
    t.string('reference', 64); // a reversal's own id at the provider (its receipt is the payment's)
    t.string('account_id', 36).notNullable().references('accounts.id');
    t.bigInteger('amount_cents').notNullable(); // as the provider sent it
    t.bigInteger('posted_cents').notNullable(); // what the ledger moved (a reversal stops at a zero balance)
    t.string('currency', 3).notNullable();
    t.string('msisdn', 16).notNullable();
    t.string('paid_at', 32).notNullable(); // the provider's timestamp
    t.string('received_at', 32).notNullable(); // the ledger row's created_at
    t.string('ledger_id', 36).notNullable();
    t.unique(['provider', 'receipt', 'kind']);
    t.index(['received_at']);
  });
  await knex.schema.alterTable('accounts', (t) => {
    t.string('language', 2).notNullable().defaultTo('en');
    t.integer('credit_warning_seconds').notNullable().defaultTo(60);
    t.boolean('last_good_document').notNullable().defaultTo(false);
  });
  await knex.schema.createTable('last_good_documents', (t) => {
    t.string('account_id', 36).notNullable();
    t.string('number', 32).notNullable();
    t.text('url').notNullable();
    t.text('document').notNullable();
    t.string('fetched_at', 32).notNullable();
    t.primary(['account_id', 'number']);
  });
  await knex.schema.alterTable('calls', (t) => {
    t.string('served_from', 16); // 'last_good': the call ran its number's last known good document
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('calls', (t) => t.dropColumn('served_from'));
  await knex.schema.dropTableIfExists('last_good_documents');
  await knex.schema.alterTable('accounts', (t) => {
    t.dropColumn('last_good_document');
    t.dropColumn('credit_warning_seconds');
    t.dropColumn('language');
  });
  await knex.schema.dropTableIfExists('wallet_topups');
  await knex.schema.dropTableIfExists('topup_providers');
}
