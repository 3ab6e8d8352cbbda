import type { Knex } from 'knex';

/**
 * Carrier routing: the `routes` table (which trunk carries which destination prefix, in what order,
 * at what buy rate) and, on each trunk, its health checking (OPTIONS pings), its upstream registration and the
 * last state the switch saw for both, so `simu trunks list` (another process) can show it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('routes', (t) => {
    t.string('id', 36).primary();
    // Digits of the E.164 number without '+' ('' is the catch-all), or a word such as `emergency`.
    t.string('prefix', 32).notNullable();
    t.string('trunk_id', 36).notNullable().references('id').inTable('trunks').onDelete('CASCADE');
    t.integer('priority').notNullable().defaultTo(0); // lower is tried first
    t.integer('weight').notNullable().defaultTo(1); // share among routes of equal prefix and priority
    t.integer('buy_rate_cents').notNullable().defaultTo(0); // what the carrier charges us, per minute
    t.string('created_at', 32).notNullable();
    t.unique(['prefix', 'trunk_id']);
    t.index(['trunk_id']);
  });
  await knex.schema.alterTable('trunks', (t) => {
    t.boolean('options_ping').notNullable().defaultTo(false);
    t.string('health', 8).notNullable().defaultTo('unknown'); // unknown | up | down
    t.string('health_changed_at', 32);
    t.boolean('register').notNullable().defaultTo(false);
    t.integer('register_expires').notNullable().defaultTo(3600);
    t.string('registration', 16).notNullable().defaultTo('none'); // none | registering | registered | failed
    t.string('registration_changed_at', 32);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('routes');
  await knex.schema.alterTable('trunks', (t) => {
    for (const c of [
      'options_ping',
      'health',
      'health_changed_at',
      'register',
      'register_expires',
      'registration',
      'registration_changed_at',
    ])
      t.dropColumn(c);
  });
}
