import type { Knex } from 'knex';

/**
 * Substring search over from_number/to_number (calls list `search`) without scanning every CDR: on SQLite, an
 * FTS5 trigram index keyed by the calls rowid, kept in step by triggers. It is only a pre-filter: the query
 * still checks `like '%…%'`, so a stale entry can never produce a wrong row. (A VACUUM may renumber rowids of a
 * table without an INTEGER PRIMARY KEY; after one, drop and re-run this migration.)
 * PostgreSQL keeps the plain LIKE scan (pg_trgm is an extension we cannot count on); see docs/api.md.
 */
export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  await knex.raw(
    `create virtual table calls_search using fts5(numbers, content='', contentless_delete=1, tokenize='trigram', detail='none')`,
  );
  await knex.raw(`insert into calls_search(rowid, numbers) select rowid, from_number || ' ' || to_number from calls`);
  await knex.raw(`create trigger calls_search_ai after insert on calls begin
    insert into calls_search(rowid, numbers) values (new.rowid, new.from_number || ' ' || new.to_number); end`);
  await knex.raw(`create trigger calls_search_ad after delete on calls begin
    delete from calls_search where rowid = old.rowid; end`);
  await knex.raw(`create trigger calls_search_au after update of from_number, to_number on calls begin
    delete from calls_search where rowid = old.rowid;
    insert into calls_search(rowid, numbers) values (new.rowid, new.from_number || ' ' || new.to_number); end`);
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  for (const t of ['calls_search_ai', 'calls_search_ad', 'calls_search_au'])
    await knex.raw(`drop trigger if exists ${t}`);
  await knex.raw('drop table if exists calls_search');
}
