import { cdrPages, type CallRow } from '../../store/index.js';
import { formatMoney } from '../../billing/index.js';
import { Flags, UsageError } from '../args.js';
import type { CommandGroup } from '../command.js';

/** The CDR columns of an export, in order (the CSV header; the JSON keys). */
export const CDR_COLUMNS = [
  'uuid',
  'sid',
  'account_uuid',
  'direction',
  'from_number',
  'to_number',
  'status',
  'reason_code',
  'emergency',
  'created_at',
  'started_at',
  'answered_at',
  'ended_at',
  'duration_seconds',
  'talk_seconds',
  'cost',
  'parent_call_uuid',
  'end_user_uuid',
  'served_from',
] as const;

type CdrOut = Record<(typeof CDR_COLUMNS)[number], string | number | boolean | null>;

function cdrOut(r: CallRow): CdrOut {
  return {
    uuid: r.id,
    sid: r.sid,
    account_uuid: r.account_id,
    direction: r.direction,
    from_number: r.from_number,
    to_number: r.to_number,
    status: r.status,
    reason_code: r.reason_code,
    emergency: r.emergency,
    created_at: r.created_at,
    started_at: r.started_at,
    answered_at: r.answered_at,
    ended_at: r.ended_at,
    duration_seconds: r.duration_seconds,
    talk_seconds: r.talk_seconds,
    cost: formatMoney(r.cost_cents),
    parent_call_uuid: r.parent_call_id,
    end_user_uuid: r.end_user_id,
    served_from: r.served_from ?? null,
  };
}

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break, quotes doubled. Caller IDs come
 * from SIP headers anyone can write, so a value a spreadsheet would run as a formula (`=`, `@`, a tab, or `+`/`-`
 * not followed by digits only) is prefixed with `'` (OWASP, CSV injection).
 */
export function csvField(v: string | number | boolean | null): string {
  if (v === null) return '';
  let s = String(v);
  if (/^[=@\t\r]/.test(s) || /^[+-](?!\d+$)/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

export function instant(v: string, flag: string): string {
  const ms = DATE.test(v) ? Date.parse(v.length === 10 ? `${v}T00:00:00Z` : v) : NaN;
  if (Number.isNaN(ms)) throw new UsageError(`--${flag} takes a date (2026-11-01) or an ISO-8601 instant, not ${v}`);
  return new Date(ms).toISOString();
}

/** CDR export for billing reconciliation and analytics. */
export const cdrCommands: CommandGroup = {
  noun: 'cdr',
  help: `  cdr export --from DATE [--to DATE] [--format csv|jsonl]
                                                 every account's CDRs created in [from, to) (to: now), oldest
                                                 first, streamed to stdout a page at a time`,
  commands: {
    async 'cdr export'(db, args, out) {
      const f = new Flags(args);
      const fromIso = instant(f.string('from', { required: true })!, 'from');
      const to = f.string('to');
      const toIso = to === undefined ? new Date().toISOString() : instant(to, 'to');
      const format = f.string('format', { default: 'csv' })!;
      f.done();
      if (format !== 'csv' && format !== 'jsonl') throw new UsageError('--format is csv or jsonl');
      if (fromIso >= toIso) throw new UsageError('--from must be before --to');
      if (format === 'csv') await out.write(CDR_COLUMNS.join(',') + '\r\n');
      for await (const page of cdrPages(db, { fromIso, toIso })) {
        const rows = page.map(cdrOut);
        const text =
          format === 'csv'
            ? rows.map((r) => CDR_COLUMNS.map((c) => csvField(r[c])).join(',') + '\r\n').join('')
            : rows.map((r) => JSON.stringify(r) + '\n').join('');
        await out.write(text); // waits for stdout to drain: a slow reader holds back the next page
      }
    },
  },
};
