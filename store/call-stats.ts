import { inTransaction, type Db } from './db.js';
import { firstRow, insertRows, runSql, selectRows } from './fixed-sql.js';
import { LIVE_CALL_STATUSES } from './calls.js';

/**
 * The charts' figures. CDRs are rolled up per account, hour and direction (and, for outbound calls, per
 * destination prefix and day) by a periodic job that reads ended calls through the created_at index: nothing is
 * written on a call's own path. A chart query reads at most a few thousand roll-up rows, whatever the CDR count.
 *
 * Each run recomputes every hour from the hour it was told to keep by the run before: the older of that run's own
 * hour and the hour of the oldest call then still in progress. So a call that ends late is counted in the hour it
 * was created in by the first run after it ended.
 */
export const DEST_PREFIX_LENGTH = 5;

const hourOf = (iso: string) => iso.slice(0, 13);

const ANSWERED = 'sum(CASE WHEN answered_at IS NOT NULL THEN 1 ELSE 0 END)';
const TALK = 'sum(CASE WHEN answered_at IS NOT NULL THEN coalesce(talk_seconds, duration_seconds, 0) ELSE 0 END)';
const PREFIX = `substr(to_number, 1, ${DEST_PREFIX_LENGTH})`;

/**
 * Recomputes the roll-ups from `fromHour` (YYYY-MM-DDTHH) on, up to the end of `fromHour`'s day when `oneDay` (a
 * long back-fill goes a day at a time). The CDRs are aggregated by a read on `readDb` (on SQLite a connection of
 * its own: the store's one connection, which the calls use, is not held by it); only the few result rows are
 * written, in a short transaction. Returns how many hourly rows it wrote.
 */
export async function rollUpCallStats(db: Db, fromHour: string, oneDay = false, readDb: Db = db): Promise<number> {
  const fromDay = fromHour.slice(0, 10);
  const next = new Date(Date.parse(`${fromDay}T00:00:00Z`) + 86400_000).toISOString();
  const until = oneDay ? { ts: next.slice(0, 19), hour: next.slice(0, 13), day: next.slice(0, 10) } : null;
  /** Ended calls created from `from` (and before the day's end, one day at a time): the condition and its values. */
  const ended = (from: string): [string, unknown[]] =>
    until
      ? ['"created_at" >= ? and "ended_at" is not null and "created_at" < ?', [from, until.ts]]
      : ['"created_at" >= ? and "ended_at" is not null', [from]];
  const [hw, hb] = ended(`${fromHour}:00:00`);
  const hourly = (
    await selectRows(
      readDb,
      'select "account_id", "direction", substr(created_at, 1, 13) as hour, ' +
        `count(*) as calls, ${ANSWERED} as answered, ${TALK} as talk_seconds, sum("cost_cents") as "cost_cents" ` +
        `from "calls" where ${hw} group by account_id, substr(created_at, 1, 13), direction`,
      hb,
    )
  ).map((r: any) => ({
    ...r,
    calls: +r.calls,
    answered: +r.answered,
    talk_seconds: +r.talk_seconds,
    cost_cents: +r.cost_cents,
  }));
  const [dw, dbind] = ended(`${fromDay}T00:00:00`);
  const dest = (
    await selectRows(
      readDb,
      `select "account_id", substr(created_at, 1, 10) as day, ${PREFIX} as prefix, ` +
        `count(*) as calls, ${ANSWERED} as answered, sum("cost_cents") as "cost_cents" ` +
        `from "calls" where ${dw} and "direction" = ? group by account_id, substr(created_at, 1, 10), ${PREFIX}`,
      [...dbind, 'outbound'],
    )
  ).map((r: any) => ({ ...r, calls: +r.calls, answered: +r.answered, cost_cents: +r.cost_cents }));
  await inTransaction(db, async (tx) => {
    if (until) {
      await runSql(
        tx,
        'delete from "call_stats_hourly" where "hour" >= ? and "hour" < ?',
        [fromHour, until.hour],
        'call_stats_hourly',
      );
      await runSql(
        tx,
        'delete from "call_dest_daily" where "day" >= ? and "day" < ?',
        [fromDay, until.day],
        'call_dest_daily',
      );
    } else {
      await runSql(tx, 'delete from "call_stats_hourly" where "hour" >= ?', [fromHour], 'call_stats_hourly');
      await runSql(tx, 'delete from "call_dest_daily" where "day" >= ?', [fromDay], 'call_dest_daily');
    }
    for (let i = 0; i < hourly.length; i += 500) await insertRows(tx, 'call_stats_hourly', hourly.slice(i, i + 500));
    for (let i = 0; i < dest.length; i += 500) await insertRows(tx, 'call_dest_daily', dest.slice(i, i + 500));
  });
  return hourly.length;
}

const LIVE_IN = `"status" in (${LIVE_CALL_STATUSES.map(() => '?').join(', ')})`;

/** The hour of the oldest call still in progress (it can still change its hour's figures), or null. */
export async function oldestLiveCallHour(db: Db): Promise<string | null> {
  const live = await firstRow(db, `select min("created_at") as "at" from "calls" where ${LIVE_IN}`, [
    ...LIVE_CALL_STATUSES,
  ]);
  return live?.at ? hourOf(String(live.at)) : null;
}

/** Where the next roll-up must start: the oldest live call's hour, or `lastHour` (the previous run's), if older. */
export async function nextRollUpHour(db: Db, lastHour: string | null): Promise<string | null> {
  const oldestLive = await oldestLiveCallHour(db);
  if (lastHour === null) {
    // First run: everything from the first CDR on.
    const first = await firstRow(db, 'select min("created_at") as "at" from "calls"', []);
    return first?.at ? hourOf(String(first.at)) : null;
  }
  return oldestLive !== null && oldestLive < lastHour ? oldestLive : lastHour;
}

export interface ChartWindow {
  /** null: every account (the console). */
  accountId: string | null;
  /** ISO instants; the window is [from, to). */
  from: string;
  to: string;
  bucket: 'hour' | 'day';
}

export interface ChartPoint {
  bucket: string;
  calls: number;
  answered: number;
  talk_seconds: number;
  cost_cents: number;
}

/** `cond` and, for one account (not the console's every account), `"account_id" = ?`, with their values. */
function ofAccount(cond: string, bindings: unknown[], accountId: string | null): [string, unknown[]] {
  return accountId ? [`${cond} and "account_id" = ?`, [...bindings, accountId]] : [cond, bindings];
}

/** Calls, answered calls, talk time and spend per hour or day of the window (from the hourly roll-up). */
export async function callSeries(db: Db, w: ChartWindow): Promise<ChartPoint[]> {
  const width = w.bucket === 'hour' ? 13 : 10;
  const [where, bindings] = ofAccount('"hour" >= ? and "hour" < ?', [hourOf(w.from), hourOf(w.to)], w.accountId);
  const rows = await selectRows(
    db,
    `select substr(hour, 1, ${width}) as bucket, sum("calls") as "calls", sum("answered") as "answered", ` +
      'sum("talk_seconds") as "talk_seconds", sum("cost_cents") as "cost_cents" from "call_stats_hourly" ' +
      `where ${where} group by substr(hour, 1, ${width}) order by "bucket" asc`,
    bindings,
  );
  return rows.map((r: any) => ({
    bucket: String(r.bucket),
    calls: Number(r.calls),
    answered: Number(r.answered),
    talk_seconds: Number(r.talk_seconds),
    cost_cents: Number(r.cost_cents),
  }));
}

/** The destination prefixes of most outbound calls in the window's days. */
export async function topDestinations(
  db: Db,
  w: Omit<ChartWindow, 'bucket'>,
  limit = 10,
): Promise<Array<{ prefix: string; calls: number; answered: number; cost_cents: number }>> {
  const [where, bindings] = ofAccount(
    '"day" >= ? and "day" <= ?',
    [w.from.slice(0, 10), new Date(Date.parse(w.to) - 1).toISOString().slice(0, 10)],
    w.accountId,
  );
  const rows = await selectRows(
    db,
    'select "prefix", sum("calls") as "calls", sum("answered") as "answered", sum("cost_cents") as "cost_cents" ' +
      `from "call_dest_daily" where ${where} group by "prefix" order by "calls" desc limit ?`,
    [...bindings, limit],
  );
  return rows.map((r: any) => ({
    prefix: String(r.prefix),
    calls: Number(r.calls),
    answered: Number(r.answered),
    cost_cents: Number(r.cost_cents),
  }));
}

/** Status callbacks that failed for good (the outbox gave up) per hour or day of the window. */
export async function webhookFailureSeries(
  db: Db,
  w: ChartWindow,
): Promise<Array<{ bucket: string; failures: number }>> {
  const width = w.bucket === 'hour' ? 13 : 10;
  // The literal state lets both stores read the failed rows' partial index (event_outbox_failed).
  const [where, bindings] = ofAccount(
    '"state" = \'failed\' and "done_at" >= ? and "done_at" < ?',
    [w.from, w.to],
    w.accountId,
  );
  const rows = await selectRows(
    db,
    `select substr(done_at, 1, ${width}) as bucket, count(*) as "failures" from "event_outbox" ` +
      `where ${where} group by substr(done_at, 1, ${width}) order by "bucket" asc`,
    bindings,
  );
  return rows.map((r: any) => ({ bucket: String(r.bucket), failures: Number(r.failures) }));
}

/** Calls in progress on every account (the console's live view), newest first. */
export async function listLiveCallsAllAccounts(db: Db, limit = 200) {
  return selectRows(
    db,
    'select "c"."id", "c"."account_id", "a"."name" as "account_name", "c"."direction", "c"."from_number", ' +
      '"c"."to_number", "c"."status", "c"."created_at", "c"."answered_at" from "calls" as "c" ' +
      `left join "accounts" as "a" on "a"."id" = "c"."account_id" where "c".${LIVE_IN} ` +
      'order by "c"."created_at" desc limit ?',
    [...LIVE_CALL_STATUSES, limit],
  );
}

/** Calls created since `sinceIso` on every account (the console's calls/s). */
export async function countCallsCreatedSince(db: Db, sinceIso: string): Promise<number> {
  const r = await firstRow(db, 'select count(*) as "n" from "calls" where "created_at" >= ?', [sinceIso]);
  return Number(r?.n ?? 0);
}
