import type { Knex } from 'knex';
import { CACHED_TABLES, UNCACHED_COLUMNS } from './read-cache.js';
import { CHANGES_CHANNEL } from './other-writers.js';

const TRIGGER = 'simu_notify_change';

/**
 * PostgreSQL: a row trigger on each cached table (store/read-cache.ts) that notifies CHANGES_CHANNEL with the
 * table's name, so every switch sharing the store drops its cached rows of that table when the writing transaction
 * commits (NOTIFY is delivered at commit; one per table per transaction). A row trigger, not a statement one: an
 * update that matches no row (a route's failure count already 0) notifies nobody. On accounts it fires only for
 * the cached columns, read from the catalogue now: the ledger's balance update notifies nobody. A migration that
 * adds a column to accounts runs this again (test/store/change-notify.test.ts checks that it did).
 */
export async function createChangeNotifyTriggers(knex: Knex): Promise<void> {
  await knex.raw(
    `create or replace function ${TRIGGER}() returns trigger language plpgsql as $$ ` +
      `begin perform pg_notify('${CHANGES_CHANNEL}', TG_TABLE_NAME); return null; end $$`,
  );
  for (const table of CACHED_TABLES) {
    let events = 'insert or update or delete';
    const skip = UNCACHED_COLUMNS[table];
    if (skip) {
      const { rows } = await knex.raw<{ rows: { column_name: string }[] }>(
        `select column_name from information_schema.columns where table_schema = current_schema() and table_name = ?
         order by ordinal_position`,
        [table],
      );
      const cached = rows.map((r) => r.column_name).filter((c) => !skip.has(c));
      events = `insert or delete or update of ${cached.map((c) => `"${c}"`).join(', ')}`;
    }
    await knex.raw(`drop trigger if exists ${TRIGGER} on "${table}"`);
    await knex.raw(
      `create trigger ${TRIGGER} after ${events} on "${table}" for each row execute function ${TRIGGER}()`,
    );
  }
}

export async function dropChangeNotifyTriggers(knex: Knex): Promise<void> {
  for (const table of CACHED_TABLES) await knex.raw(`drop trigger if exists ${TRIGGER} on "${table}"`);
  await knex.raw(`drop function if exists ${TRIGGER}()`);
}
