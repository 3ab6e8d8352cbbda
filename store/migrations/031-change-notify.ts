import type { Knex } from 'knex';
import { createChangeNotifyTriggers, dropChangeNotifyTriggers } from '../change-notify.js';

/**
 * PostgreSQL: the cached tables notify their writes (store/change-notify.ts), so a switch drops what it cached when
 * another process (the CLI, another node) commits a change. SQLite needs nothing: the switch polls data_version.
 */
export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') await createChangeNotifyTriggers(knex);
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') await dropChangeNotifyTriggers(knex);
}
