import type { Knex } from 'knex';

/**
 * The calls search index (005, SQLite's FTS5 trigram table calls_search) is kept in batches instead of by a trigger
 * on every insert: FTS5 writes a new segment in every transaction that touches it and merges them later, about six
 * pages of every group commit of the call path. Now a watermark, calls_search_state.indexed_rowid, says which rows
 * are indexed: every calls row with a rowid at or below it is in calls_search. The switch indexes the rows past it
 * every half second (store/calls-search.ts), and a search also reads the rows past it (the tail: the last second of
 * calls), so results stay exact. Existing rows were indexed by 005's trigger: the watermark starts at the top.
 *
 * The triggers stay for the rows at or below the watermark: a delete or a change of numbers is followed at once,
 * and an insert that reuses the rowid of a deleted row (SQLite takes max(rowid) + 1) is indexed at once. A stale
 * entry is harmless (the search tests every row with LIKE); a missing one would hide a call. PostgreSQL has no
 * search index (005).
 */
const WATERMARK = '(select indexed_rowid from calls_search_state)';
const NUMBERS = `new.from_number || ' ' || new.to_number`;

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  await knex.raw(
    `create table calls_search_state (id integer primary key check (id = 1), indexed_rowid integer not null)`,
  );
  // 005's trigger indexed every row so far, unless a rebuild of the calls table dropped it (knex's alterTable on
  // SQLite copies the table, and its triggers go with the old one): then the indexer starts from the first row.
  const [{ n }] = await knex.raw(
    `select count(*) as n from sqlite_master where type = 'trigger' and name = 'calls_search_ai'`,
  );
  await knex.raw(`insert into calls_search_state (id, indexed_rowid) values (1, ?)`, [
    Number(n) > 0 ? ((await knex.raw('select coalesce(max(rowid), 0) as m from calls'))[0].m as number) : 0,
  ]);
  for (const t of ['calls_search_ai', 'calls_search_ad', 'calls_search_au'])
    await knex.raw(`drop trigger if exists ${t}`);
  await knex.raw(`create trigger calls_search_ai after insert on calls when new.rowid <= ${WATERMARK} begin
    insert into calls_search(rowid, numbers) values (new.rowid, ${NUMBERS}); end`);
  await knex.raw(`create trigger calls_search_ad after delete on calls when old.rowid <= ${WATERMARK} begin
    delete from calls_search where rowid = old.rowid; end`);
  await knex.raw(`create trigger calls_search_au after update of from_number, to_number on calls
    when old.rowid <= ${WATERMARK} begin
    delete from calls_search where rowid = old.rowid;
    insert into calls_search(rowid, numbers) values (new.rowid, ${NUMBERS}); end`);
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  await knex.raw(`insert into calls_search(rowid, numbers)
    select rowid, from_number || ' ' || to_number from calls where rowid > ${WATERMARK}`);
  for (const t of ['calls_search_ai', 'calls_search_ad', 'calls_search_au'])
    await knex.raw(`drop trigger if exists ${t}`);
  await knex.raw('drop table calls_search_state');
  await knex.raw(`create trigger calls_search_ai after insert on calls begin
    insert into calls_search(rowid, numbers) values (new.rowid, ${NUMBERS}); end`);
  await knex.raw(`create trigger calls_search_ad after delete on calls begin
    delete from calls_search where rowid = old.rowid; end`);
  await knex.raw(`create trigger calls_search_au after update of from_number, to_number on calls begin
    delete from calls_search where rowid = old.rowid;
    insert into calls_search(rowid, numbers) values (new.rowid, ${NUMBERS}); end`);
}
