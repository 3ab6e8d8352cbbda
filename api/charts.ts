import { callSeries, topDestinations, webhookFailureSeries, type ChartWindow, type Db } from '../store/index.js';

/**
 * The figures the portal's and the console's charts draw, for a window the viewer picks: calls and
 * answered calls, answer rate, average talk time and spend per hour or day, the top destination prefixes and
 * failed status callbacks. Read from the hourly roll-up (store/call-stats.ts), so the cost does not grow with the
 * CDR count; the roll-up trails the CDRs by at most one run of its job (a minute).
 */
export class ChartWindowError extends Error {}

const MAX_DAYS = 92;
const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}(:\d{2}(:\d{2}(\.\d{1,3})?)?)?Z?)?$/;

/** The window a query string asks for: `days` back from now (default 7), or `from`/`to`; `bucket` hour or day. */
export function chartWindow(q: Record<string, unknown>, accountId: string | null, now = Date.now()): ChartWindow {
  const str = (k: string) => (typeof q[k] === 'string' ? (q[k] as string) : undefined);
  let to: number;
  let from: number;
  const f = str('from');
  const t = str('to');
  if (f !== undefined || t !== undefined) {
    if (!f || !t || !ISO.test(f) || !ISO.test(t)) throw new ChartWindowError('from and to must both be ISO dates');
    from = Date.parse(f);
    to = Date.parse(t);
    if (!(from < to)) throw new ChartWindowError('from must be before to');
  } else {
    const days = Number(str('days') ?? '7');
    if (!Number.isInteger(days) || days < 1 || days > MAX_DAYS)
      throw new ChartWindowError(`days must be 1 to ${MAX_DAYS}`);
    // Whole hours: the current hour is included.
    to = Math.ceil((now + 1) / 3600_000) * 3600_000;
    from = to - days * 86400_000;
  }
  if (to - from > MAX_DAYS * 86400_000) throw new ChartWindowError(`the window is at most ${MAX_DAYS} days`);
  const bucket = str('bucket') ?? (to - from <= 2 * 86400_000 ? 'hour' : 'day');
  if (bucket !== 'hour' && bucket !== 'day') throw new ChartWindowError('bucket must be hour or day');
  return { accountId, from: new Date(from).toISOString(), to: new Date(to).toISOString(), bucket };
}

export async function chartData(db: Db, w: ChartWindow) {
  const [series, destinations, webhookFailures] = await Promise.all([
    callSeries(db, w),
    topDestinations(db, w),
    webhookFailureSeries(db, w),
  ]);
  const totals = series.reduce(
    (a, p) => ({
      calls: a.calls + p.calls,
      answered: a.answered + p.answered,
      talk_seconds: a.talk_seconds + p.talk_seconds,
      cost_cents: a.cost_cents + p.cost_cents,
    }),
    { calls: 0, answered: 0, talk_seconds: 0, cost_cents: 0 },
  );
  return {
    window: { from: w.from, to: w.to, bucket: w.bucket },
    totals: {
      ...totals,
      answer_rate: totals.calls ? totals.answered / totals.calls : null,
      average_talk_seconds: totals.answered ? totals.talk_seconds / totals.answered : null,
      webhook_failures: webhookFailures.reduce((a, p) => a + p.failures, 0),
    },
    series: series.map((p) => ({
      ...p,
      answer_rate: p.calls ? p.answered / p.calls : null,
      average_talk_seconds: p.answered ? p.talk_seconds / p.answered : null,
    })),
    destinations,
    webhook_failures: webhookFailures,
  };
}
