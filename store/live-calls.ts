import type { Knex } from 'knex';

/**
 * The per-account count of live calls on SQLite (migration 030): account_live_calls, kept by three triggers on
 * `calls`. A rebuild of the calls table (knex's alterTable on SQLite copies the table, and its triggers go with
 * the old one) would leave the count behind, so the switch checks at start that the triggers are there and, when
 * they are not, creates them and counts again (ensureLiveCallTriggers).
 */
const TRIGGERS = ['calls_live_ai', 'calls_live_au', 'calls_live_ad'] as const;
/** calls.ts LIVE_CALL_STATUSES, written out: the triggers a migration makes must not change with the code. */
export const COUNTED_LIVE_STATUSES = ['initiated', 'ringing', 'answered'] as const;
const LIVE = `(${COUNTED_LIVE_STATUSES.map((s) => `'${s}'`).join(', ')})`;

export async function createLiveCallTriggers(knex: Knex): Promise<void> {
  await dropLiveCallTriggers(knex);
  await knex.raw('delete from account_live_calls');
  await knex.raw(`insert into account_live_calls (account_id, live)
    select account_id, count(*) from calls where status in ${LIVE} group by account_id`);
  await knex.raw(`create trigger calls_live_ai after insert on calls when new.status in ${LIVE} begin
    insert into account_live_calls (account_id, live) values (new.account_id, 1)
      on conflict (account_id) do update set live = live + 1; end`);
  // A call's account never changes; its status crosses between live and ended (either way, for a sweep's repair).
  await knex.raw(`create trigger calls_live_au after update of status on calls
    when (old.status in ${LIVE}) <> (new.status in ${LIVE}) begin
    insert into account_live_calls (account_id, live) values (new.account_id, case when new.status in ${LIVE} then 1 else 0 end)
      on conflict (account_id) do update set live = live + case when new.status in ${LIVE} then 1 else -1 end; end`);
  await knex.raw(`create trigger calls_live_ad after delete on calls when old.status in ${LIVE} begin
    update account_live_calls set live = live - 1 where account_id = old.account_id; end`);
}

export async function dropLiveCallTriggers(knex: Knex): Promise<void> {
  for (const t of TRIGGERS) await knex.raw(`drop trigger if exists ${t}`);
}

/** At the switch's start on SQLite: the triggers are all there, or are made again and the count taken afresh. */
export async function ensureLiveCallTriggers(knex: Knex): Promise<boolean> {
  if (knex.client.config.client === 'pg') return false;
  const rows = (await knex.raw(
    `select name from sqlite_master where type = 'trigger' and name in (${TRIGGERS.map(() => '?').join(', ')})`,
    [...TRIGGERS],
  )) as { name: string }[];
  if (rows.length === TRIGGERS.length) return false;
  await knex.transaction((trx) => createLiveCallTriggers(trx));
  return true;
}
