import { canonicalJson, canonicalJsonMerged, canonicalString as str } from './canonical-json.js';
import type { EventCode, EventName } from './catalogue.js';

/**
 * The stream frame (spec: Events, "Stream frame"): exactly these keys, in this order, and a key whose value would
 * be empty (undefined, null, '' or an object without keys) is left out. No `id`, no `accountId`.
 */
export interface StreamFrame {
  code: EventCode;
  event: EventName;
  sid?: string;
  customPayload?: Record<string, unknown>;
  createdAt: string;
  data?: Record<string, unknown>;
}

/** The call snapshot a status callback's `data` carries (spec: "Status callback body"). */
export interface CallSnapshot {
  sid: string;
  direction: string;
  from_number: string;
  to_number: string;
  status: string;
  reason_code: string | null;
  duration_seconds: number | null;
  talk_seconds: number | null;
  started_at: string | null;
  answered_at: string | null;
  ended_at: string | null;
}

export const CALL_SNAPSHOT_FIELDS = [
  'sid',
  'direction',
  'from_number',
  'to_number',
  'status',
  'reason_code',
  'duration_seconds',
  'talk_seconds',
  'started_at',
  'answered_at',
  'ended_at',
] as const satisfies ReadonlyArray<keyof CallSnapshot>;

/** Picks exactly the snapshot fields from a call row (or anything shaped like one); absent fields become null. */
export function toCallSnapshot(row: Record<string, unknown>): CallSnapshot {
  // One literal in CALL_SNAPSHOT_FIELDS' order: one object shape, no copy.
  const duration = row.duration_seconds ?? null;
  const talk = row.talk_seconds ?? null;
  return {
    sid: row.sid ?? null,
    direction: row.direction ?? null,
    from_number: row.from_number ?? null,
    to_number: row.to_number ?? null,
    status: row.status ?? null,
    reason_code: row.reason_code ?? null,
    duration_seconds: duration === null ? null : Number(duration),
    talk_seconds: talk === null ? null : Number(talk),
    started_at: row.started_at ?? null,
    answered_at: row.answered_at ?? null,
    ended_at: row.ended_at ?? null,
  } as CallSnapshot;
}

const isEmpty = (v: unknown): boolean =>
  v === undefined ||
  v === null ||
  v === '' ||
  (typeof v === 'object' && !Array.isArray(v) && Object.keys(v as object).length === 0);

export interface FrameParts {
  code: EventCode;
  event: EventName;
  sid?: string | null;
  customPayload?: Record<string, unknown> | null;
  createdAt: string;
  data?: Record<string, unknown> | null;
}

export function buildStreamFrame(p: FrameParts): StreamFrame {
  // Built in the spec's key order; the empty ones are simply not set.
  const ordered: Record<string, unknown> = { code: p.code, event: p.event };
  if (!isEmpty(p.sid)) ordered.sid = p.sid;
  if (!isEmpty(p.customPayload)) ordered.customPayload = p.customPayload;
  ordered.createdAt = p.createdAt;
  if (!isEmpty(p.data)) ordered.data = p.data;
  return ordered as unknown as StreamFrame;
}

/**
 * The status-callback body: the envelope plus `id` and `accountId`; for call events `data` is the stream data
 * widened with the full call snapshot (the snapshot's fields win, so `reason_code` is the stored one). Serialised
 * with sorted keys and no whitespace; these exact bytes are stored in the outbox, signed and sent on every attempt.
 *
 * The same bytes as `canonicalJson({ ...frame, data, id, accountId })`, written out member by member in sorted key
 * order (accountId, code, createdAt, customPayload, data, event, id, sid) rather than copied and sorted: a frame
 * has exactly the keys buildStreamFrame gives it.
 */
export function buildStatusCallbackBody(
  frame: StreamFrame,
  id: string,
  accountId: string,
  snapshot: CallSnapshot | null,
): string {
  const data = snapshot
    ? canonicalJsonMerged(frame.data, snapshot as unknown as Record<string, unknown>)
    : frame.data
      ? canonicalJson(frame.data)
      : '{}';
  let out = `{"accountId":${str(accountId)},"code":${str(frame.code)},"createdAt":${str(frame.createdAt)}`;
  if (frame.customPayload !== undefined) out += `,"customPayload":${canonicalJson(frame.customPayload)}`;
  out += `,"data":${data},"event":${str(frame.event)},"id":${str(id)}`;
  if (frame.sid !== undefined) out += `,"sid":${str(frame.sid)}`;
  return `${out}}`;
}
