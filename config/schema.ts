/**
 * Every setting of the switch: its key, environment variable, default and expected form.
 * The README's configuration table is generated from this list (`npm run simu -- config table`),
 * so the two cannot drift apart.
 */
export type SettingKind = 'port' | 'int' | 'string' | 'path' | 'url-or-empty' | 'bool' | 'enum' | 'list' | 'json';

export interface SettingSpec {
  key: string;
  env: string;
  kind: SettingKind;
  default: string;
  help: string;
  values?: readonly string[];
  min?: number;
  max?: number;
}

export const SETTINGS = [
  {
    key: 'http.host',
    env: 'SIMU_HTTP_HOST',
    kind: 'string',
    default: '0.0.0.0',
    help: 'Address the HTTP API listens on.',
  },
  {
    key: 'http.port',
    env: 'SIMU_HTTP_PORT',
    kind: 'port',
    default: '8080',
    help: 'Port of the REST API, portal and event stream.',
  },
  {
    key: 'sip.host',
    env: 'SIMU_SIP_HOST',
    kind: 'string',
    default: '0.0.0.0',
    help: 'Address the SIP transports listen on.',
  },
  { key: 'sip.port', env: 'SIMU_SIP_PORT', kind: 'port', default: '5060', help: 'SIP over UDP and TCP.' },
  {
    key: 'sip.tlsPort',
    env: 'SIMU_SIP_TLS_PORT',
    kind: 'port',
    default: '5061',
    help: 'SIP over TLS (0 disables).',
    min: 0,
  },
  {
    key: 'sip.wsPort',
    env: 'SIMU_SIP_WS_PORT',
    kind: 'port',
    default: '5066',
    help: 'SIP over WebSocket (0 disables).',
    min: 0,
  },
  {
    key: 'sip.wssPort',
    env: 'SIMU_SIP_WSS_PORT',
    kind: 'port',
    default: '5067',
    help: 'SIP over secure WebSocket (0 disables).',
    min: 0,
  },
  {
    key: 'sip.tlsCert',
    env: 'SIMU_SIP_TLS_CERT',
    kind: 'path',
    default: '',
    help: 'PEM certificate for TLS and WSS; empty generates a self-signed one in the data directory.',
  },
  {
    key: 'sip.tlsKey',
    env: 'SIMU_SIP_TLS_KEY',
    kind: 'path',
    default: '',
    help: 'PEM private key matching sip.tlsCert.',
  },
  {
    key: 'publicHost',
    env: 'SIMU_PUBLIC_HOST',
    kind: 'string',
    default: '127.0.0.1',
    help: 'Host name or address phones, carriers and webhook receivers reach this switch at.',
  },
  {
    key: 'publicBaseUrl',
    env: 'SIMU_PUBLIC_BASE_URL',
    kind: 'url-or-empty',
    default: '',
    help: 'Base URL of the API as customers see it (signed download URLs); empty means http://publicHost:http.port.',
  },
  {
    key: 'dataDir',
    env: 'SIMU_DATA_DIR',
    kind: 'path',
    default: './data',
    help: 'Database file, recordings, speech cache, generated secrets.',
  },
  {
    key: 'databaseUrl',
    env: 'SIMU_DATABASE_URL',
    kind: 'url-or-empty',
    default: '',
    help: 'postgres://user:pass@host/db for PostgreSQL; empty uses SQLite in the data directory.',
  },
  {
    key: 'logLevel',
    env: 'SIMU_LOG_LEVEL',
    kind: 'enum',
    default: 'warn',
    values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    help: 'Structured log level (JSON lines on stderr).',
  },
  {
    key: 'rtpengine.urls',
    env: 'SIMU_RTPENGINE_URLS',
    kind: 'list',
    default: '',
    help: 'External rtpengine ng addresses (host:port, comma-separated); empty starts and supervises a local rtpengine.',
  },
  {
    key: 'rtpengine.ngPort',
    env: 'SIMU_RTPENGINE_NG_PORT',
    kind: 'port',
    default: '22222',
    help: 'ng control port of the supervised local rtpengine.',
  },
  {
    key: 'rtpengine.dtmfPort',
    env: 'SIMU_RTPENGINE_DTMF_PORT',
    kind: 'port',
    default: '22223',
    help: 'UDP port on 127.0.0.1 where the local rtpengine reports RFC 4733 digits (--dtmf-log-dest).',
  },
  {
    key: 'rtpengine.interface',
    env: 'SIMU_RTPENGINE_INTERFACE',
    kind: 'string',
    default: '127.0.0.1',
    help: 'Address the local rtpengine relays media on (rtpengine --interface).',
  },
  {
    key: 'rtpengine.portMin',
    env: 'SIMU_RTP_PORT_MIN',
    kind: 'port',
    default: '30000',
    help: 'Lowest RTP port of the local rtpengine.',
  },
  {
    key: 'rtpengine.portMax',
    env: 'SIMU_RTP_PORT_MAX',
    kind: 'port',
    default: '40000',
    help: 'Highest RTP port of the local rtpengine.',
  },
  { key: 'tts.voice', env: 'SIMU_TTS_VOICE', kind: 'string', default: 'en', help: 'Default espeak-ng voice for Say.' },
  {
    key: 'billing.initialSeconds',
    env: 'SIMU_BILLING_INITIAL_SECONDS',
    kind: 'int',
    default: '60',
    min: 1,
    max: 3600,
    help: 'First billing block of a connected call, in seconds.',
  },
  {
    key: 'billing.incrementSeconds',
    env: 'SIMU_BILLING_INCREMENT_SECONDS',
    kind: 'int',
    default: '1',
    min: 1,
    max: 3600,
    help: 'Billing increment after the first block, in seconds.',
  },
  {
    key: 'tokens.phoneTtlSeconds',
    env: 'SIMU_PHONE_TOKEN_TTL',
    kind: 'int',
    default: '3600',
    min: 60,
    max: 604800,
    help: 'Default lifetime of a phone token.',
  },
  {
    key: 'tokens.phoneMaxTtlSeconds',
    env: 'SIMU_PHONE_TOKEN_MAX_TTL',
    kind: 'int',
    default: '86400',
    min: 60,
    max: 2592000,
    help: 'Longest lifetime a phone token may be minted with.',
  },
  {
    key: 'tokens.streamTtlSeconds',
    env: 'SIMU_STREAM_TOKEN_TTL',
    kind: 'int',
    default: '30',
    min: 5,
    max: 300,
    help: 'Lifetime of a stream token (single use).',
  },
  {
    key: 'ice.servers',
    env: 'SIMU_ICE_SERVERS',
    kind: 'json',
    default: '[]',
    help: 'JSON array of RTCIceServer objects handed to browser phones.',
  },
  {
    key: 'ice.turnUrls',
    env: 'SIMU_TURN_URLS',
    kind: 'list',
    default: '',
    help: 'TURN URLs (comma-separated) given time-limited credentials from ice.turnSecret.',
  },
  {
    key: 'ice.turnSecret',
    env: 'SIMU_TURN_SECRET',
    kind: 'string',
    default: '',
    help: 'coturn static-auth-secret; when set, TURN credentials are minted per token.',
  },
  {
    key: 'webhooks.timeoutMs',
    env: 'SIMU_WEBHOOK_TIMEOUT_MS',
    kind: 'int',
    default: '10000',
    min: 100,
    max: 60000,
    help: 'Deadline of one webhook attempt (the spec: 10 s for call control).',
  },
  {
    key: 'webhooks.allowPrivate',
    env: 'SIMU_WEBHOOK_ALLOW_PRIVATE',
    kind: 'bool',
    default: 'true',
    help: 'Allow webhook URLs on private and loopback addresses.',
  },
  {
    key: 'recordings.retentionDays',
    env: 'SIMU_RECORDING_RETENTION_DAYS',
    kind: 'int',
    default: '90',
    min: 1,
    max: 36500,
    help: 'Days a recording is kept before its audio is deleted (an account may have its own: simu account retention).',
  },
  {
    key: 'demo.numbers',
    env: 'SIMU_DEMO_NUMBERS',
    kind: 'list',
    default: '+254700000001,+254700000002,+254700000003',
    help: 'Numbers added to the pool on the very first run.',
  },
] as const satisfies readonly SettingSpec[];

export type SettingKey = (typeof SETTINGS)[number]['key'];
