import type { Knex } from 'knex';

/**
 * Web portal sign-in (web/): one row per person who may sign in to an account's portal. The password is kept as
 * an scrypt hash (`scrypt$N$r$p$salt$hash`, hex) and the second factor as an RFC 6238 base32 secret;
 * `totp_last_step` is the last accepted time step, so a code cannot be replayed within its window.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('portal_users', (t) => {
    t.string('id', 36).primary();
    t.string('account_id', 36).notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.string('email', 320).notNullable().unique();
    t.text('password_hash').notNullable();
    t.string('totp_secret', 64).notNullable();
    t.boolean('totp_enrolled').notNullable().defaultTo(false);
    t.bigInteger('totp_last_step').notNullable().defaultTo(0);
    t.string('created_at', 32).notNullable();
    t.index(['account_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('portal_users');
}
