import assert from 'node:assert/strict';

/**
 * Response shapes written from the spec's tables (not from the server's schemas, so a drift in either shows).
 * Each field maps to its allowed JSON types; every field listed is required and no other field may appear,
 * except those in `optional`.
 */
type T = 'string' | 'integer' | 'boolean' | 'object' | 'array' | 'null';
type Shape = Record<string, T[]>;

const S: T[] = ['string'];
const SN: T[] = ['string', 'null'];
const I: T[] = ['integer'];
const IN: T[] = ['integer', 'null'];
const B: T[] = ['boolean'];

export const CALL: Shape = {
  uuid: S,
  sid: S,
  direction: S,
  from_number: S,
  to_number: S,
  status: S,
  reason_code: S,
  reason_label: S,
  duration_seconds: IN,
  talk_seconds: IN,
  cost: S,
  tts_seconds: I,
  started_at: SN,
  answered_at: SN,
  ended_at: SN,
  created_at: S,
};
export const CALL_OPTIONAL: Shape = {
  customPayload: ['object', 'null'],
  custom_payload: ['object', 'null'],
  // Beyond the spec (docs/api.md "Calls"): the call a leg belongs to.
  parent_call_uuid: SN,
  parent_call_sid: SN,
};
export const NUMBER: Shape = {
  uuid: S,
  number: S,
  friendly_name: S,
  webhook_urls: ['object'],
  webhook_inbound: ['object'],
  is_active: B,
  acquired_at: SN,
};
export const AVAILABLE: Shape = { uuid: S, number: S };
export const RECORDING: Shape = {
  uuid: S,
  call_uuid: S,
  call_sid: S,
  duration_seconds: IN,
  size_bytes: IN,
  media_format: S,
  storage_backend: S,
  expires_at: SN,
  created_at: S,
};
/** Beyond the spec (issue 19, docs/api.md "Call handling and voicemail"): a voicemail message's owner and state. */
export const RECORDING_BEYOND_SPEC: Shape = { end_user_uuid: SN, voicemail_status: SN };
/** `sip_domain` is beyond the spec (issue 19, docs/api.md). */
export const ACCOUNT: Shape = { uuid: S, name: S, wallet_balance: S, status: S, sip_domain: S };
export const WEBHOOKS: Shape = { endpoints: ['object'], fallback_mode: S, fallback_value: S, numbers: ['array'] };
export const SECRET: Shape = { signing_secret: S };
export const API_KEY: Shape = { uuid: S, name: S, prefix: S, is_active: B, last_used_at: SN, created_at: S };
export const BALANCE: Shape = { balance: S, currency: S };
export const TRANSACTION: Shape = { uuid: S, direction: S, kind: S, amount: S, balance_before: S, created_at: S };
/** Beyond the spec (docs/api.md "Wallet transactions"): the provider's side of a mobile-money top-up. */
export const TRANSACTION_BEYOND_SPEC: Shape = { provider: SN, receipt: SN, reference: SN };
export const END_USER: Shape = {
  uuid: S,
  email: S,
  display_name: S,
  extension_number: S,
  registration_state: S,
  is_active: B,
  last_registered_at: SN,
  created_at: S,
};
/** Beyond the spec (issue 19): per end-user call handling and voicemail. */
export const END_USER_BEYOND_SPEC: Shape = {
  dnd: B,
  forward_always: SN,
  forward_busy: SN,
  forward_no_answer: SN,
  no_answer_seconds: I,
  voicemail_enabled: B,
  voicemail_greeting_asset: SN,
};
export const PHONE_TOKEN: Shape = {
  uuid: S,
  end_user: S,
  extension_number: S,
  max_concurrent: I,
  is_valid: B,
  expires_at: SN,
  revoked_at: SN,
  created_at: SN,
};
export const STREAM_TOKEN: Shape = { token: S, ttl_seconds: I };
export const MESSAGE: Shape = { message: S };
export const ERROR: Shape = { detail: S, code: S };

function typeOf(v: unknown): T {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (Number.isInteger(v)) return 'integer';
  return typeof v as T;
}

export function assertShape(value: unknown, shape: Shape, optional: Shape = {}, what = 'body'): void {
  assert.equal(typeOf(value), 'object', `${what} is an object`);
  const obj = value as Record<string, unknown>;
  for (const [k, types] of Object.entries(shape)) {
    assert.ok(k in obj, `${what}.${k} is present`);
    assert.ok(types.includes(typeOf(obj[k])), `${what}.${k} is ${types.join('|')}, got ${JSON.stringify(obj[k])}`);
  }
  for (const k of Object.keys(obj)) {
    if (k in shape) continue;
    assert.ok(k in optional, `${what} has no unexpected field ${k}`);
    assert.ok(optional[k].includes(typeOf(obj[k])), `${what}.${k} is ${optional[k].join('|')}`);
  }
}

export const MONEY = /^\d+\.\d{2}$/;
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

export function assertError(r: { status: number; body: any }, status: number, code?: string | RegExp): void {
  assert.equal(r.status, status, `status ${status}, got ${r.status} ${JSON.stringify(r.body)}`);
  assertShape(r.body, ERROR, {}, 'error');
  assert.ok(r.body.detail.length > 5, 'detail is a sentence');
  if (typeof code === 'string') assert.equal(r.body.code, code);
  else if (code) assert.match(r.body.code, code);
}
