import type { Db } from './db.js';
import { LIVE_CALL_STATUSES } from './calls.js';

/**
 * The charts' figures (issue 21). CDRs are rolled up per account, hour and direction (and, for outbound calls, per
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
  const ended = (from: string) => {
    const q = readDb('calls').where('created_at', '>=', from).whereNotNull('ended_at');
    return until ? q.andWhere('created_at', '<', until.ts) : q;
  };
  const hourly = (
    await ended(`${fromHour}:00:00`)
      .select('account_id', 'direction', readDb.raw('substr(created_at, 1, 13) as hour'))
      .select(readDb.raw(`count(*) as calls, ${ANSWERED} as answered, ${TALK} as talk_seconds`))
      .sum({ cost_cents: 'cost_cents' })
      .groupByRaw('account_id, substr(created_at, 1, 13), direction')
  ).map((r: any) => ({
    ...r,
    calls: +r.calls,
    answered: +r.answered,
    talk_seconds: +r.talk_seconds,
    cost_cents: +r.cost_cents,
  }));
  const dest = (
    await ended(`${fromDay}T00:00:00`)
      .andWhere('direction', 'outbound')
      .select('account_id', readDb.raw(`substr(created_at, 1, 10) as day, ${PREFIX} as prefix`))
      .select(readDb.raw(`count(*) as calls, ${ANSWERED} as answered`))
      .sum({ cost_cents: 'cost_cents' })
      .groupByRaw(`account_id, substr(created_at, 1, 10), ${PREFIX}`)
  ).map((r: any) => ({ ...r, calls: +r.calls, answered: +r.answered, cost_cents: +r.cost_cents }));
  await db.transaction(async (trx) => {
    const h = trx('call_stats_hourly').where('hour', '>=', fromHour);
    await (until ? h.andWhere('hour', '<', until.hour) : h).delete();
    const d = trx('call_dest_daily').where('day', '>=', fromDay);
    await (until ? d.andWhere('day', '<', until.day) : d).delete();
    for (let i = 0; i < hourly.length; i += 500) await trx('call_stats_hourly').insert(hourly.slice(i, i + 500));
    for (let i = 0; i < dest.length; i += 500) await trx('call_dest_daily').insert(dest.slice(i, i + 500));
  });
  return hourly.length;
}

/** The hour of the oldest call still in progress (it can still change its hour's figures), or null. */
export async function oldestLiveCallHour(db: Db): Promise<string | null> {
  const live = await db('calls').whereIn('status', LIVE_CALL_STATUSES).min({ at: 'created_at' }).first();
  return live?.at ? hourOf(String(live.at)) : null;
}

/** Where the next roll-up must start: the oldest live call's hour, or `lastHour` (the previous run's), if older. */
export async function nextRollUpHour(db: Db, lastHour: string | null): Promise<string | null> {
  const oldestLive = await oldestLiveCallHour(db);
  if (lastHour === null) {
    // First run: everything from the first CDR on.
    const first = await db('calls').min({ at: 'created_at' }).first();
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

/** Calls, answered calls, talk time and spend per hour or day of the window (from the hourly roll-up). */
export async function callSeries(db: Db, w: ChartWindow): Promise<ChartPoint[]> {
  const width = w.bucket === 'hour' ? 13 : 10;
  const q = db('call_stats_hourly')
    .select(db.raw(`substr(hour, 1, ${width}) as bucket`))
    .sum({ calls: 'calls', answered: 'answered', talk_seconds: 'talk_seconds', cost_cents: 'cost_cents' })
    .where('hour', '>=', hourOf(w.from))
    .andWhere('hour', '<', hourOf(w.to))
    .groupByRaw(`substr(hour, 1, ${width})`)
    .orderBy('bucket');
  if (w.accountId) q.andWhere('account_id', w.accountId);
  return (await q).map((r: any) => ({
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
  const q = db('call_dest_daily')
    .select('prefix')
    .sum({ calls: 'calls', answered: 'answered', cost_cents: 'cost_cents' })
    .where('day', '>=', w.from.slice(0, 10))
    .andWhere('day', '<=', new Date(Date.parse(w.to) - 1).toISOString().slice(0, 10))
    .groupBy('prefix')
    .orderBy('calls', 'desc')
    .limit(limit);
  if (w.accountId) q.andWhere('account_id', w.accountId);
  return (await q).map((r: any) => ({
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
  const q = db('event_outbox')
    .select(db.raw(`substr(done_at, 1, ${width}) as bucket`))
    .count({ failures: '*' })
    .where('state', 'failed')
    .andWhere('done_at', '>=', w.from)
    .andWhere('done_at', '<', w.to)
    .groupByRaw(`substr(done_at, 1, ${width})`)
    .orderBy('bucket');
  if (w.accountId) q.andWhere('account_id', w.accountId);
  return (await q).map((r: any) => ({ bucket: String(r.bucket), failures: Number(r.failures) }));
}

/** Calls in progress on every account (the console's live view), newest first. */
export async function listLiveCallsAllAccounts(db: Db, limit = 200) {
  return db('calls as c')
    .leftJoin('accounts as a', 'a.id', 'c.account_id')
    .whereIn('c.status', LIVE_CALL_STATUSES)
    .orderBy('c.created_at', 'desc')
    .limit(limit)
    .select(
      'c.id',
      'c.account_id',
      'a.name as account_name',
      'c.direction',
      'c.from_number',
      'c.to_number',
      'c.status',
      'c.created_at',
      'c.answered_at',
    );
}

/** Calls created since `sinceIso` on every account (the console's calls/s). */
export async function countCallsCreatedSince(db: Db, sinceIso: string): Promise<number> {
  const [{ n }] = await db('calls').where('created_at', '>=', sinceIso).count({ n: '*' });
  return Number(n);
}
