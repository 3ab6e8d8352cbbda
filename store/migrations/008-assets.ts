import type { Knex } from 'knex';

/**
 * Account audio assets: uploads converted once to the engine's playback format (8 kHz mono 16-bit WAV)
 * and played by `<Play asset="name">`. A name is unique within its account; deactivating keeps the row and file.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('assets', (t) => {
    t.string('id', 36).primary();
    t.string('account_id', 36).notNullable().references('accounts.id');
    t.string('name', 128).notNullable();
    t.boolean('is_active').notNullable().defaultTo(true);
    t.string('storage_backend', 16).notNullable().defaultTo('local');
    t.text('storage_path').notNullable();
    t.double('duration_seconds').notNullable();
    t.bigInteger('size_bytes').notNullable();
    t.string('original_format', 16).notNullable();
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.unique(['account_id', 'name']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('assets');
}
