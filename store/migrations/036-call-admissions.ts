import type { Knex } from 'knex';
import { COUNTED_LIVE_STATUSES } from '../live-calls.js';

/**
 * Admission decided by the store (PostgreSQL, where several nodes share it): `call_admissions` holds one row per
 * call admitted in the last seconds (the calls-per-second window, counted per account) and marks the admissions
 * whose call row is still being written (`settled` false: counted on top of the live calls). `simu_admit` decides
 * one admission under the account's advisory lock, so two nodes never both take the account's last slot; see
 * store/admissions.ts. SQLite (one box, one process) decides in the process and has neither.
 */
export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.raw(`create table call_admissions (
    id bigserial primary key,
    account_id varchar(36) not null,
    node_id varchar(64),
    admitted_at timestamptz not null default clock_timestamp(),
    settled boolean not null default false
  )`);
  await knex.raw('create index call_admissions_account_at on call_admissions (account_id, admitted_at)');
  const live = COUNTED_LIVE_STATUSES.map((s) => `'${s}'`).join(', ');
  // Each statement of a volatile PL/pgSQL function reads a snapshot taken when it starts: the reads after the lock
  // see every admission and call committed before it was granted.
  await knex.raw(`create function simu_admit(p_account varchar, p_node varchar, p_cap integer, p_cps integer,
      p_minimum bigint, p_stale_ms integer)
    returns table (verdict text, balance_cents bigint, live integer, pending integer, recent integer, admission_id bigint)
    language plpgsql volatile as $$
    declare
      v_now timestamptz;
      v_balance bigint;
      v_live integer;
      v_placing integer;
      v_recent integer;
      v_id bigint;
    begin
      perform pg_advisory_xact_lock(hashtext('simu_admit'), hashtext(p_account));
      v_now := clock_timestamp();
      select a.balance_cents into v_balance from accounts a where a.id = p_account;
      if v_balance is null then
        return query select 'missing'::text, 0::bigint, 0, 0, 0, null::bigint;
        return;
      end if;
      delete from call_admissions c where c.account_id = p_account
        and c.admitted_at < v_now - make_interval(secs => 1)
        and (c.settled or c.admitted_at < v_now - make_interval(secs => p_stale_ms / 1000.0));
      select count(*) into v_live from calls k where k.account_id = p_account and k.status in (${live});
      select count(*) filter (where not c.settled and c.admitted_at >= v_now - make_interval(secs => p_stale_ms / 1000.0)),
             count(*) filter (where c.admitted_at > v_now - make_interval(secs => 1))
        into v_placing, v_recent from call_admissions c where c.account_id = p_account;
      if v_balance < p_minimum * (v_live + v_placing + 1) then
        return query select 'balance'::text, v_balance, v_live, v_placing, v_recent, null::bigint;
      elsif v_live + v_placing >= p_cap then
        return query select 'cap'::text, v_balance, v_live, v_placing, v_recent, null::bigint;
      elsif v_recent >= p_cps then
        return query select 'cps'::text, v_balance, v_live, v_placing, v_recent, null::bigint;
      else
        insert into call_admissions (account_id, node_id, admitted_at) values (p_account, p_node, v_now)
          returning id into v_id;
        return query select 'ok'::text, v_balance, v_live, v_placing, v_recent, v_id;
      end if;
    end $$`);
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.raw('drop function simu_admit(varchar, varchar, integer, integer, bigint, integer)');
  await knex.raw('drop table call_admissions');
}
