import type { z } from 'zod';
import { callHandlingOut } from './call-handling-schemas.js';
import { formatMoney, CURRENCY } from '../billing/index.js';
import type {
  AccountRow,
  ApiKeyRow,
  CallEventRow,
  CallRow,
  EndUserRow,
  NumberRow,
  PhoneTokenRow,
  RecordingRow,
  WalletTopupRow,
  WalletTransactionRow,
} from '../store/index.js';
import { phoneTokenIsValid } from '../store/index.js';
import type * as S from './schemas.js';

/** Rows of the store as the spec's resources. Field order follows the spec's tables. */

function payload(text: string | null): Record<string, unknown> | null {
  if (text == null) return null;
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

export function callOut(c: CallRow): z.infer<typeof S.CallOut> {
  const custom = payload(c.custom_payload);
  return {
    uuid: c.id,
    sid: c.sid,
    direction: c.direction,
    from_number: c.from_number,
    to_number: c.to_number,
    status: c.status,
    reason_code: c.reason_code ?? '',
    reason_label: c.reason_label ?? '',
    duration_seconds: c.duration_seconds,
    talk_seconds: c.talk_seconds,
    cost: formatMoney(c.cost_cents),
    tts_seconds: c.tts_seconds,
    // The spec's table spells it customPayload and its machine-readable schema custom_payload: both are sent.
    custom_payload: custom,
    customPayload: custom,
    started_at: c.started_at,
    answered_at: c.answered_at,
    ended_at: c.ended_at,
    created_at: c.created_at,
    parent_call_uuid: c.parent_call_id,
    parent_call_sid: c.parent_call_sid ?? null,
    // Beyond the spec: only on a call whose answering machine detection decided.
    ...(c.answered_by ? { answered_by: c.answered_by as NonNullable<z.infer<typeof S.CallOut>['answered_by']> } : {}),
  };
}

/** A stored event of a call as GET /api/calls/{uuid}/events lists it (`data` as the stream frame carried it). */
export function callEventOut(e: CallEventRow): z.infer<typeof S.CallEventOut> {
  return { code: e.code, event: e.event, data: payload(e.data) ?? {}, created_at: e.created_at };
}

const PURPOSE_COLUMNS = [
  ['voice_inbound', 'webhook_voice_inbound'],
  ['voice_outbound', 'webhook_voice_outbound'],
  ['status', 'webhook_status'],
] as const;

export function numberOut(n: NumberRow, account: AccountRow): z.infer<typeof S.NumberOut> {
  const webhook_urls: Record<string, string> = {};
  for (const [purpose, col] of PURPOSE_COLUMNS) webhook_urls[purpose] = n[col];
  const webhook_inbound = n.webhook_voice_inbound
    ? { url: n.webhook_voice_inbound, source: 'custom' as const }
    : account.webhook_voice_inbound
      ? { url: account.webhook_voice_inbound, source: 'default' as const }
      : { url: '', source: 'none' as const };
  return {
    uuid: n.id,
    number: n.number,
    friendly_name: n.friendly_name,
    webhook_urls,
    webhook_inbound,
    is_active: n.is_active,
    acquired_at: n.acquired_at,
  };
}

export function webhookConfigOut(a: AccountRow, numbers: NumberRow[]): z.infer<typeof S.WebhookConfigOut> {
  const endpoints: Record<string, string> = {};
  for (const [purpose, col] of PURPOSE_COLUMNS) endpoints[purpose] = a[col];
  const overrides: Array<{ number: string; purpose: (typeof PURPOSE_COLUMNS)[number][0]; url: string }> = [];
  for (const n of numbers)
    for (const [purpose, col] of PURPOSE_COLUMNS)
      if (n[col]) overrides.push({ number: n.number, purpose, url: n[col] });
  return { endpoints, fallback_mode: a.fallback_mode, fallback_value: a.fallback_value, numbers: overrides };
}

/**
 * The Account object; `sip_domain` (beyond the spec) is the domain its phones register to: the account's
 * label under the switch's `sip.domain` (the uuid form `<uuid>.<sip.domain>` when it has no label yet).
 */
export const accountOut = (a: AccountRow, switchDomain: string): z.infer<typeof S.AccountOut> => ({
  uuid: a.id,
  name: a.name,
  wallet_balance: formatMoney(a.balance_cents),
  status: a.status,
  sip_domain: `${a.sip_label ?? a.id}.${switchDomain}`,
});

export const recordingOut = (r: RecordingRow): z.infer<typeof S.RecordingOut> => ({
  uuid: r.id,
  call_uuid: r.call_id,
  call_sid: r.call_sid,
  duration_seconds: r.duration_seconds,
  size_bytes: r.size_bytes,
  media_format: r.media_format,
  storage_backend: r.storage_backend,
  expires_at: r.expires_at,
  created_at: r.created_at,
  end_user_uuid: r.end_user_id ?? null,
  voicemail_status: r.voicemail_status ?? null,
});

export const apiKeyOut = (k: ApiKeyRow): z.infer<typeof S.ApiKeyOut> => ({
  uuid: k.id,
  name: k.name,
  prefix: k.prefix,
  is_active: k.is_active,
  last_used_at: k.last_used_at,
  created_at: k.created_at,
});

export const balanceOut = (a: AccountRow): z.infer<typeof S.BalanceOut> => ({
  balance: formatMoney(a.balance_cents),
  currency: CURRENCY as 'KES',
});

/** A ledger row; `topup` is the provider callback that posted it, when one did (store/wallet-topups.ts). */
export const transactionOut = (
  t: WalletTransactionRow,
  topup?: Pick<WalletTopupRow, 'provider' | 'receipt' | 'reference'>,
): z.infer<typeof S.TransactionOut> => ({
  uuid: t.id,
  direction: t.direction,
  kind: t.kind,
  amount: formatMoney(t.amount_cents),
  balance_before: formatMoney(t.balance_before_cents),
  created_at: t.created_at,
  provider: topup?.provider ?? null,
  receipt: topup?.receipt ?? null,
  reference: topup?.reference ?? null,
});

export const endUserOut = (u: EndUserRow): z.infer<typeof S.EndUserOut> => ({
  uuid: u.id,
  email: u.email,
  display_name: u.display_name,
  extension_number: u.extension_number,
  registration_state: u.registration_state,
  is_active: u.is_active,
  last_registered_at: u.last_registered_at,
  created_at: u.created_at,
  ...callHandlingOut(u),
});

export const phoneTokenOut = (t: PhoneTokenRow, now: Date = new Date()): z.infer<typeof S.PhoneTokenOut> => ({
  uuid: t.id,
  end_user: t.end_user_id,
  extension_number: t.extension_number,
  max_concurrent: t.max_concurrent,
  is_valid: phoneTokenIsValid(t, now),
  expires_at: t.expires_at,
  revoked_at: t.revoked_at,
  created_at: t.created_at,
});
