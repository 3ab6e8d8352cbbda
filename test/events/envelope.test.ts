import assert from 'node:assert/strict';
import {
  CALL_SNAPSHOT_FIELDS,
  EventCodes,
  buildStatusCallbackBody,
  buildStreamFrame,
  eventFor,
  toCallSnapshot,
  type EventCode,
} from '../../events/index.js';

/**
 * The status-callback body as the spec defines it ("sorted keys and no extra whitespace", keys by code point,
 * undefined left out, toJSON honoured), written here independently of events/canonical-json.ts.
 */
function reference(v: unknown): string | undefined {
  if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
    v = (v as { toJSON(): unknown }).toJSON();
  }
  if (v === undefined) return undefined;
  if (Array.isArray(v)) return `[${v.map((x) => reference(x) ?? 'null').join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const byCodePoint = (a: string, b: string): number => {
      const x = Array.from(a, (c) => c.codePointAt(0)!);
      const y = Array.from(b, (c) => c.codePointAt(0)!);
      for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
      return x.length - y.length;
    };
    const parts = Object.keys(v)
      .sort(byCodePoint)
      .map((k) => [k, reference((v as Record<string, unknown>)[k])] as const)
      .filter(([, e]) => e !== undefined)
      .map(([k, e]) => `${JSON.stringify(k)}:${e}`);
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(v);
}

const row = {
  id: '7d1c0b6e-3a52-4a37-9d8e-0f3f3c1e2a10',
  sid: 'call_7d1c0b6e3a524a379d8e0f3f',
  account_id: 'acc',
  direction: 'outbound',
  from_number: '+254700000001',
  to_number: '+254700000002',
  status: 'completed',
  reason_code: 'CALL.0300',
  duration_seconds: '42',
  talk_seconds: 37,
  cost_cents: 123,
  started_at: '2026-01-01T10:00:00.000Z',
  answered_at: null,
  ended_at: new Date('2026-01-01T10:00:42.000Z'),
};

interface Case {
  code: EventCode;
  sid?: string;
  customPayload?: Record<string, unknown> | null;
  data?: Record<string, unknown>;
  snapshot: boolean;
}

const cases: Case[] = [
  { code: EventCodes.callInitiated, sid: row.sid, snapshot: true },
  { code: EventCodes.ttsGenerated, sid: row.sid, data: { seconds: 2.4, tier: 'standard' }, snapshot: true },
  {
    code: EventCodes.callCompleted,
    sid: row.sid,
    customPayload: { zeta: 1, Alpha: [{ b: 2, a: 'é ☎ "q" \\ \n' }, null, -0], '😀': true, '\uff01': 'x' },
    // `status` and `reason_code` are the snapshot's too: the snapshot's values win.
    data: { reasonCode: 'CALL.0300', duration: 42, cost: '1.23', status: 'stale', reason_code: 'old' },
    snapshot: true,
  },
  { code: EventCodes.callRinging, sid: row.sid, customPayload: {}, data: { skipped: undefined }, snapshot: true },
  { code: EventCodes.callAnswered, snapshot: false },
  { code: EventCodes.ttsGenerated, data: { nested: { b: [1, 'two', { d: 4, c: 3 }], a: 1e21 } }, snapshot: false },
  { code: EventCodes.callFailed, sid: 'call_\u2028x', customPayload: { 'a b': '\u0007', ab: 'ü' }, snapshot: true },
  {
    code: EventCodes.ttsGenerated,
    sid: row.sid,
    customPayload: { long: 'a'.repeat(300), longer: `${'b'.repeat(60)}"\\\u007f\ud800é` },
    snapshot: true,
  },
];

describe('events: status-callback body', () => {
  it('is the canonical JSON of the envelope with id, accountId and the widened data, byte for byte', () => {
    for (const c of cases) {
      const frame = buildStreamFrame({
        code: c.code,
        event: eventFor(c.code).event,
        sid: c.sid,
        customPayload: c.customPayload,
        createdAt: '2026-01-01T10:00:01.000Z',
        data: c.data,
      });
      const snapshot = c.snapshot ? toCallSnapshot(row) : null;
      const body = buildStatusCallbackBody(frame, 'evt_1', 'acc_1', snapshot);
      const expected = reference({
        ...frame,
        data: { ...(frame.data ?? {}), ...(snapshot ?? {}) },
        id: 'evt_1',
        accountId: 'acc_1',
      });
      assert.equal(body, expected, `body of ${c.code}`);
      assert.deepEqual(JSON.parse(body), JSON.parse(expected!), `parsed body of ${c.code}`);
    }
  });

  it('takes exactly the snapshot fields, absent ones as null and durations as numbers', () => {
    assert.deepEqual(Object.keys(toCallSnapshot({})), [...CALL_SNAPSHOT_FIELDS]);
    assert.ok(
      Object.values(toCallSnapshot({ cost_cents: 5 })).every((v) => v === null),
      'absent fields are null',
    );
    const s = toCallSnapshot(row);
    assert.equal(s.duration_seconds, 42);
    assert.equal(s.talk_seconds, 37);
  });

  it('has the bytes a customer receives for a completed call', () => {
    const frame = buildStreamFrame({
      code: EventCodes.callCompleted,
      event: eventFor(EventCodes.callCompleted).event,
      sid: row.sid,
      customPayload: { order: 'A-1', b: { y: 1, x: 'é' } },
      createdAt: '2026-01-01T10:00:01.000Z',
      data: { reasonCode: 'CALL.0300', duration: 42, cost: '1.23' },
    });
    assert.equal(
      buildStatusCallbackBody(frame, 'evt_1', 'acc_1', toCallSnapshot(row)),
      '{"accountId":"acc_1","code":"CALL.0300","createdAt":"2026-01-01T10:00:01.000Z",' +
        '"customPayload":{"b":{"x":"é","y":1},"order":"A-1"},"data":{"answered_at":null,"cost":"1.23",' +
        '"direction":"outbound","duration":42,"duration_seconds":42,"ended_at":"2026-01-01T10:00:42.000Z",' +
        '"from_number":"+254700000001","reasonCode":"CALL.0300","reason_code":"CALL.0300",' +
        '"sid":"call_7d1c0b6e3a524a379d8e0f3f","started_at":"2026-01-01T10:00:00.000Z","status":"completed",' +
        '"talk_seconds":37,"to_number":"+254700000002"},"event":"call.completed","id":"evt_1",' +
        '"sid":"call_7d1c0b6e3a524a379d8e0f3f"}',
    );
  });
});
