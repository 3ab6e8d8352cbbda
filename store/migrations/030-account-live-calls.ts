import type { Knex } from 'knex';
import { createLiveCallTriggers, dropLiveCallTriggers } from '../live-calls.js';

/**
 * How many calls of each account are live (initiated, ringing or answered), kept by triggers on `calls` in
 * account_live_calls (SQLite), so admission reads one row instead of counting the account's live calls in the
 * index, which grows with the live calls a carrier's minutes-long calls keep (docs/performance.md). The triggers follow every writer of `calls`
 * (the switch, the CLI, a sweep), so the count is exact. PostgreSQL keeps counting (its store is shared by nodes
 * and a counter row would serialise every call write of an account behind the transaction holding it); see
 * store/live-calls.ts.
 */
export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  await knex.raw(
    `create table account_live_calls (account_id varchar(36) primary key, live integer not null default 0)`,
  );
  await createLiveCallTriggers(knex);
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  await dropLiveCallTriggers(knex);
  await knex.raw('drop table account_live_calls');
}
