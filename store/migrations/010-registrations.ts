import type { Knex } from 'knex';

/**
 * The UDP registrations of end-users' phones, so that a restart of the switch does not leave every phone
 * unreachable until it next refreshes (which may be an hour away). Bindings over TCP, TLS and WebSocket are not
 * kept: they live as long as their connection, and every connection ends with the process.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('registrations', (t) => {
    t.string('end_user_id', 36).notNullable();
    t.string('contact', 512).notNullable();
    t.string('account_id', 36).notNullable();
    t.string('extension', 16).notNullable();
    t.string('source_address', 64).notNullable();
    t.integer('source_port').notNullable();
    t.string('flow_id', 128).notNullable();
    t.string('token_id', 36).notNullable();
    t.string('call_id', 256).notNullable();
    t.bigInteger('cseq').notNullable();
    t.bigInteger('registered_at').notNullable(); // epoch ms
    t.bigInteger('expires_at').notNullable(); // epoch ms
    t.primary(['end_user_id', 'contact']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('registrations');
}
