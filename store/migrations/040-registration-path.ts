import type { Knex } from 'knex';

/**
 * A kept registration's Path (RFC 3327): the route, through the front that holds the phone's connection, that
 * requests to the binding take. Null for a phone registered straight to the node.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('registrations', (t) => {
    t.text('path').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('registrations', (t) => {
    t.dropColumn('path');
  });
}
