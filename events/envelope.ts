import { canonicalJson } from './signing.js';
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
  const out: Record<string, unknown> = {};
  for (const f of CALL_SNAPSHOT_FIELDS) out[f] = row[f] ?? null;
  for (const f of ['duration_seconds', 'talk_seconds'] as const) if (out[f] !== null) out[f] = Number(out[f]);
  return out as unknown as CallSnapshot;
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
 */
export function buildStatusCallbackBody(
  frame: StreamFrame,
  id: string,
  accountId: string,
  snapshot: CallSnapshot | null,
): string {
  const data = snapshot ? { ...(frame.data ?? {}), ...snapshot } : (frame.data ?? {});
  return canonicalJson({ ...frame, data, id, accountId });
}
