import { z } from 'zod';
import { CallHandlingOut, CallHandlingUpdate } from './call-handling-schemas.js';
import { DIGITS_PATTERN, MACHINE_DETECTION_LIMITS, MAX_DIGITS } from '../media/index.js';

/**
 * Every request and response shape of the API, in one place. Routes validate requests with these schemas and
 * the OpenAPI document (openapi.ts) is generated from them, so the description cannot drift from the code.
 */

// ---- building blocks ----
export const E164 = z.string().regex(/^\+[1-9]\d{6,14}$/, 'expected an E.164 number such as +254700000001');
export const HttpUrl = z
  .string()
  .max(2000)
  .pipe(z.url({ protocol: /^https?$/, error: 'expected an absolute http(s) URL' }));
/** A webhook URL field: an absolute http(s) URL, or a blank string meaning "none / inherit". */
export const UrlOrBlank = z.union([z.literal(''), HttpUrl], { error: 'expected an absolute http(s) URL or ""' });
const Uuid = z.string().min(1, 'expected a uuid').max(64);
/**
 * A `from_dt`/`to_dt` bound, always read as UTC (docs/api.md): a date-time with a zone (`Z`, `+03:00`) is that
 * instant; one without a zone is UTC, never the server's local time; a date alone is its midnight UTC. The value
 * handed to the route is the normalised `...Z` instant.
 */
const IsoDateTime = z
  .union([z.iso.datetime({ offset: true, local: true }), z.iso.date()], {
    error: 'expected an ISO-8601 date-time or date, such as 2026-01-31T08:00:00Z or 2026-01-31',
  })
  .transform(utcInstant);

/** See IsoDateTime: the UTC instant of an already validated ISO-8601 date-time or date. */
export function utcInstant(value: string): string {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return `${value}T00:00:00.000Z`;
  const zoned = /(?:Z|[+-]\d{2}:\d{2})$/.test(value);
  return new Date(zoned ? value : `${value}Z`).toISOString();
}
const Purpose = z.enum(['voice_inbound', 'voice_outbound', 'status']);
export const PURPOSES = Purpose.options;

const intParam = (min: number, max: number, dflt: number) => {
  const msg = `expected an integer from ${min} to ${max}`;
  return z.coerce.number({ error: msg }).int(msg).min(min, msg).max(max, msg).default(dflt);
};
/** Spec, Limits: list `limit` 1 to 200, default 50 (also used for recordings and transactions, docs/api.md). */
export const Limit = intParam(1, 200, 50);
export const Offset = intParam(0, 1_000_000_000, 0);

// ---- requests ----
export const CallListQuery = z.object({
  direction: z.enum(['inbound', 'outbound', 'internal']).optional(),
  status: z.enum(['initiated', 'ringing', 'answered', 'completed', 'failed']).optional(),
  search: z.string().max(64).optional(),
  from_dt: IsoDateTime.optional(),
  to_dt: IsoDateTime.optional(),
  limit: Limit,
  offset: Offset,
});

/**
 * A phone number as people write it (E.164, or national / `00` forms read with the account's country by the
 * route: numbers/normalise); bounded here, read there.
 */
export const DialledNumber = z
  .string()
  .min(1, 'expected a phone number such as +254712345678 or 0712345678')
  .max(32, 'expected a phone number of at most 32 characters');

const amdLimit = (key: keyof typeof MACHINE_DETECTION_LIMITS, what: string) =>
  z
    .number()
    .int()
    .min(MACHINE_DETECTION_LIMITS[key][0])
    .max(MACHINE_DETECTION_LIMITS[key][1])
    .optional()
    .describe(what);

/** Answering machine detection's thresholds (beyond the spec; media/README.md has the defaults). */
export const MachineDetectionParamsBody = z.strictObject({
  timeout_ms: amdLimit(
    'timeoutMs',
    'Longest the detector listens; then unknown (machine_end_other once a machine was heard)',
  ),
  initial_silence_ms: amdLimit('initialSilenceMs', 'Silence from the answer this long: unknown'),
  greeting_ms: amdLimit('greetingMs', 'Voice in total this long: a machine'),
  after_greeting_silence_ms: amdLimit('afterGreetingSilenceMs', 'Silence after a shorter answer this long: human'),
  end_silence_ms: amdLimit('endSilenceMs', "DetectMessageEnd: silence after a machine's voice this long ends it"),
  min_word_ms: amdLimit('minWordMs', 'Shortest voice that is a word'),
  between_words_silence_ms: amdLimit('betweenWordsSilenceMs', 'Silence that separates two words'),
  max_words: amdLimit('maxWords', 'This many words: a machine'),
  max_word_ms: amdLimit('maxWordMs', 'One word this long: a machine'),
  silence_threshold: amdLimit('silenceThreshold', 'Mean absolute amplitude (16-bit) below which audio is silence'),
});

export const OriginateBody = z
  .object({
    to: DialledNumber,
    from: DialledNumber,
    url: HttpUrl,
    timeout: z.number().int().min(1).max(600).default(30),
    customPayload: z.record(z.string(), z.unknown()).nullable().optional(),
    machine_detection: z
      .enum(['Enable', 'DetectMessageEnd'], { error: 'expected "Enable" or "DetectMessageEnd"' })
      .optional()
      .describe(
        'Answering machine detection (beyond the spec): decide human or machine at once, or wait for the end of a greeting',
      ),
    machine_detection_params: MachineDetectionParamsBody.optional(),
    async_amd: z
      .boolean()
      .default(false)
      .describe('Run the call-control document at once; the verdict arrives as AMD.0200 and the callback'),
    async_amd_status_callback: HttpUrl.optional().describe('Async detection: where the signed verdict is POSTed'),
  })
  .refine((b) => b.machine_detection !== undefined || b.machine_detection_params === undefined, {
    error: '"machine_detection_params" needs "machine_detection"',
    path: ['machine_detection_params'],
  })
  .refine((b) => b.machine_detection !== undefined || !b.async_amd, {
    error: '"async_amd" needs "machine_detection"',
    path: ['async_amd'],
  })
  .refine((b) => b.async_amd || b.async_amd_status_callback === undefined, {
    error: '"async_amd_status_callback" needs "async_amd": true',
    path: ['async_amd_status_callback'],
  });

/** Longest inline document POST /api/calls/{uuid}/update takes, in characters (a fetched one may be 64 KiB). */
export const MAX_UPDATE_TWIML_CHARS = 16 * 1024;
export const CallUpdateBody = z
  .strictObject({
    url: HttpUrl.optional().describe('Fetch the next document from here now (a signed call-control POST)'),
    method: z.string().max(8).optional().describe('Only POST (the default): every request Simu sends is a POST'),
    twiml: z
      .string()
      .min(1)
      .max(MAX_UPDATE_TWIML_CHARS)
      .optional()
      .describe('An inline verb document, validated like a fetched one'),
  })
  .refine((b) => (b.url === undefined) !== (b.twiml === undefined), {
    error: 'give exactly one of "url" and "twiml"',
  })
  .refine((b) => b.method === undefined || b.url !== undefined, { error: '"method" goes with "url" only' });
export const CallDigitsBody = z.strictObject({
  digits: z
    .string()
    .min(1)
    .max(MAX_DIGITS)
    .regex(DIGITS_PATTERN, 'expected keys 0-9 * # A-D, and w for a half-second pause')
    .describe('Keys to press, sent as RFC 4733 events; w waits 0.5 s'),
});

export const SidBody = z.object({ sid: z.string().min(1, 'expected a call sid').max(64) });
export const SidQuery = SidBody;
export const UuidBody = z.object({ uuid: Uuid });

export const ConfigureNumberBody = z.object({
  uuid: Uuid,
  webhook_urls: z
    .strictObject({
      voice_inbound: UrlOrBlank.optional(),
      voice_outbound: UrlOrBlank.optional(),
      status: UrlOrBlank.optional(),
    })
    .nullable()
    .optional(),
  friendly_name: z.string().max(200).nullable().optional(),
});

export const RecordingListQuery = z.object({
  call_uuid: Uuid.optional(),
  /** Beyond the spec: the voicemail messages of one end-user. */
  end_user_uuid: Uuid.optional(),
  limit: Limit,
  offset: Offset,
});
export const RecordingDownloadBody = z.object({
  uuid: Uuid,
  ttl_seconds: z.number().int().min(1).max(86400).default(300),
});

export const PhoneTokenMintBody = z.object({
  uuid: Uuid,
  ttl_seconds: z.number().int().min(60).max(2_592_000).nullable().optional(),
  max_concurrent: z.number().int().min(1).max(10).nullable().optional(),
});

export const EndUserCreateBody = z.object({
  email: z.email('expected an email address').max(320),
  display_name: z.string().max(200).default(''),
});
export const EndUserUpdateBody = z
  .object({
    uuid: Uuid,
    display_name: z.string().max(200).nullable().optional(),
    is_active: z.boolean().nullable().optional(),
  })
  .extend(CallHandlingUpdate.shape);

export const WebhooksUpdateBody = z.object({
  purpose: Purpose.default('voice_inbound'),
  url: UrlOrBlank.nullable().optional(),
  fallback_mode: z.enum(['message', 'play', 'drop']).nullable().optional(),
  fallback_value: z.string().max(2000).optional(),
});

export const ApiKeyCreateBody = z.object({ name: z.string().min(1, 'expected a non-empty name').max(200) });
export const TransactionListQuery = z.object({ limit: Limit, offset: Offset });
export const NoQuery = z.object({});

// ---- responses ----
const Ts = z.string().describe('ISO-8601');
const TsOrNull = Ts.nullable();
const Money = z
  .string()
  .regex(/^-?\d+\.\d{2}$/)
  .describe('KES, two decimals');

export const CallOut = z.object({
  uuid: z.string(),
  sid: z.string(),
  direction: z.enum(['inbound', 'outbound', 'internal']),
  from_number: z.string(),
  to_number: z.string(),
  status: z.enum(['initiated', 'ringing', 'answered', 'completed', 'failed']),
  reason_code: z.string().describe('empty while the call has no outcome yet'),
  reason_label: z.string(),
  duration_seconds: z.number().int().nullable(),
  talk_seconds: z.number().int().nullable(),
  cost: Money,
  tts_seconds: z.number().int(),
  answered_by: z
    .enum(['human', 'machine_start', 'machine_end_beep', 'machine_end_silence', 'machine_end_other', 'fax', 'unknown'])
    .nullable()
    .optional()
    .describe("Answering machine detection's verdict (beyond the spec); null without detection or before it decided"),
  custom_payload: z.record(z.string(), z.unknown()).nullable().optional(),
  customPayload: z.record(z.string(), z.unknown()).nullable().optional(),
  started_at: TsOrNull,
  answered_at: TsOrNull,
  ended_at: TsOrNull,
  created_at: Ts,
  parent_call_uuid: z
    .string()
    .nullable()
    .describe(
      'Beyond the spec: the uuid of the call this one is a leg of (a Dial leg, a forward, a transferred party), else null',
    ),
  parent_call_sid: z.string().nullable().describe("Beyond the spec: that call's sid, else null"),
});
export const CallEventListQuery = z.object({ limit: Limit, offset: Offset });
export const CallEventOut = z.object({
  code: z.string().describe('the event code (docs/events.md)'),
  event: z.string(),
  data: z.record(z.string(), z.unknown()).describe("the event's own fields, as on the stream frame"),
  created_at: Ts,
});
export const CallEventListOut = z.object({
  events: z.array(CallEventOut),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
});
export const CallListOut = z.object({
  calls: z.array(CallOut),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
});
export const NumberOut = z.object({
  uuid: z.string(),
  number: z.string(),
  friendly_name: z.string(),
  webhook_urls: z.record(z.string(), z.string()),
  webhook_inbound: z.object({ url: z.string(), source: z.enum(['custom', 'default', 'none']) }),
  is_active: z.boolean(),
  acquired_at: TsOrNull,
});
export const AvailableNumberOut = z.object({ uuid: z.string(), number: z.string() });
export const RecordingOut = z.object({
  uuid: z.string(),
  call_uuid: z.string(),
  call_sid: z.string(),
  duration_seconds: z.number().int().nullable(),
  size_bytes: z.number().int().nullable(),
  media_format: z.enum(['wav']),
  storage_backend: z.enum(['local']),
  expires_at: TsOrNull,
  created_at: Ts,
  /** Beyond the spec: a voicemail message's end-user and whether it was listened to. */
  end_user_uuid: z.string().nullable(),
  voicemail_status: z.enum(['new', 'saved']).nullable(),
});
export const RecordingDownloadOut = z.object({ url: z.string(), expires_at: Ts, ttl_seconds: z.number().int() });
export const AccountOut = z.object({
  uuid: z.string(),
  name: z.string(),
  wallet_balance: Money,
  status: z.enum(['active', 'suspended']),
  /** Beyond the spec: the SIP domain the account's phones use, e.g. `acme.sip.example.net`. */
  sip_domain: z.string(),
});
export const WebhookConfigOut = z.object({
  endpoints: z.record(z.string(), z.string()),
  fallback_mode: z.enum(['message', 'play', 'drop']),
  fallback_value: z.string(),
  numbers: z.array(z.object({ number: z.string(), purpose: Purpose, url: z.string() })),
});
export const SigningSecretOut = z.object({ signing_secret: z.string() });
export const ApiKeyOut = z.object({
  uuid: z.string(),
  name: z.string(),
  prefix: z.string(),
  is_active: z.boolean(),
  last_used_at: TsOrNull,
  created_at: Ts,
});
export const ApiKeyCreatedOut = ApiKeyOut.extend({ key: z.string() });
export const BalanceOut = z.object({ balance: Money, currency: z.literal('KES') });
export const TransactionOut = z.object({
  uuid: z.string(),
  direction: z.enum(['credit', 'debit']),
  kind: z.enum(['topup', 'did_setup', 'call', 'tts', 'adjustment']),
  amount: Money,
  balance_before: Money,
  created_at: Ts,
  provider: z
    .string()
    .nullable()
    .describe(
      'Beyond the spec: the mobile-money provider whose callback posted this row (a top-up or its reversal), else null',
    ),
  receipt: z
    .string()
    .nullable()
    .describe(
      "Beyond the spec: the provider's receipt of the payment (for a reversal, the payment reversed), else null",
    ),
  reference: z.string().nullable().describe("Beyond the spec: a reversal's own id at the provider, else null"),
});
export const EndUserOut = z
  .object({
    uuid: z.string(),
    email: z.string(),
    display_name: z.string(),
    extension_number: z.string(),
    registration_state: z.enum(['registered', 'unregistered']),
    is_active: z.boolean(),
    last_registered_at: TsOrNull,
    created_at: Ts,
  })
  .extend(CallHandlingOut.shape);
export const PhoneTokenOut = z.object({
  uuid: z.string(),
  end_user: z.string(),
  extension_number: z.string(),
  max_concurrent: z.number().int(),
  is_valid: z.boolean(),
  expires_at: TsOrNull,
  revoked_at: TsOrNull,
  created_at: TsOrNull,
});
export const IceServerOut = z
  .object({
    urls: z.union([z.string(), z.array(z.string())]),
    username: z.string().optional(),
    credential: z.string().optional(),
  })
  .passthrough();
export const PhoneTokenMintOut = z.object({
  token: z.string(),
  phone_token: PhoneTokenOut,
  iceServers: z.array(IceServerOut),
});
export const StreamTokenOut = z.object({ token: z.string(), ttl_seconds: z.number().int() });
export const HealthOut = z.object({ status: z.enum(['ok', 'degraded']) });
export const MessageOut = z.object({ message: z.string() });
export const ErrorOut = z.object({ detail: z.string(), code: z.string() });
