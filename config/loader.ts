import os from 'node:os';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from './errors.js';
import { isSupportedCountryCode } from '../numbers/index.js';
import { SETTINGS, type SettingSpec } from './schema.js';

/** One setting of the table. */
type Setting = (typeof SETTINGS)[number];

/** The value `parseValue` makes of a setting of this kind. */
type ValueOf<S extends Setting> = S extends { kind: 'port' | 'int' }
  ? number
  : S extends { kind: 'bool' }
    ? boolean
    : S extends { kind: 'enum'; values: readonly (infer V)[] }
      ? V
      : S extends { kind: 'list' }
        ? string[]
        : S extends { kind: 'json' }
          ? Array<Record<string, unknown>>
          : string;

/** `{ a: { b: V } }` for the key `a.b`. */
type Nested<K extends string, V> = K extends `${infer Head}.${infer Rest}`
  ? { [P in Head]: Nested<Rest, V> }
  : { [P in K]: V };

/** One nested object per setting (distributes over the union of settings). */
type NestedEach<S> = S extends Setting ? Nested<S['key'], ValueOf<S>> : never;

type Intersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;

/** Flattens intersections into one object type, recursively, so editors show plain nested objects. */
type Plain<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]: Plain<T[K]> } : T;

/**
 * The switch's configuration, derived from the settings table (schema.ts): every key is a (nested) field whose type
 * is what its kind parses to, so the table and the type cannot drift apart.
 */
export type Config = Plain<Intersection<NestedEach<Setting>>>;

type Raw = Record<string, string>;

function parseValue(spec: SettingSpec, raw: string, source: string): unknown {
  const bad = (expected: string): never => {
    throw new ConfigError(spec.key, source, raw, expected);
  };
  switch (spec.kind) {
    case 'port':
    case 'int': {
      const min = spec.min ?? (spec.kind === 'port' ? 1 : Number.MIN_SAFE_INTEGER);
      const max = spec.max ?? (spec.kind === 'port' ? 65535 : Number.MAX_SAFE_INTEGER);
      const what = spec.kind === 'port' ? 'a port number' : 'a whole number';
      if (!/^-?\d+$/.test(raw.trim())) bad(`${what} from ${min} to ${max}`);
      const n = Number(raw);
      if (n < min || n > max) bad(`${what} from ${min} to ${max}`);
      return n;
    }
    case 'bool':
      if (/^(true|1|yes|on)$/i.test(raw)) return true;
      if (/^(false|0|no|off)$/i.test(raw)) return false;
      return bad('true or false');
    case 'enum':
      if (!spec.values?.includes(raw)) bad(`one of ${spec.values?.join(', ')}`);
      return raw;
    case 'list':
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    case 'json':
      try {
        const v = JSON.parse(raw);
        if (!Array.isArray(v) || !v.every((e) => e && typeof e === 'object' && 'urls' in e))
          bad('a JSON array of objects with a urls member');
        return v;
      } catch (e) {
        if (e instanceof ConfigError) throw e;
        return bad('a JSON array of objects with a urls member');
      }
    case 'url-or-empty':
      if (raw === '') return raw;
      try {
        new URL(raw);
      } catch {
        bad('an absolute URL or an empty string');
      }
      return raw;
    case 'path':
    case 'string':
      return raw;
  }
}

function setPath(target: Record<string, any>, key: string, value: unknown): void {
  const parts = key.split('.');
  let node = target;
  for (const p of parts.slice(0, -1)) node = node[p] ??= {};
  node[parts[parts.length - 1]] = value;
}

function flatten(obj: unknown, prefix = '', out: Raw = {}): Raw {
  if (obj && typeof obj === 'object' && !Array.isArray(obj)) {
    for (const [k, v] of Object.entries(obj)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix) {
    out[prefix] =
      Array.isArray(obj) && typeof obj[0] !== 'object'
        ? obj.join(',')
        : typeof obj === 'string'
          ? obj
          : JSON.stringify(obj);
  }
  return out;
}

/**
 * Defaults, then an optional JSON file (SIMU_CONFIG, or ./simu.config.json when present), then SIMU_* environment
 * variables. Every value is checked; the first bad one throws a ConfigError naming the key, value and expected form.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const out: Record<string, any> = {};
  const filePath = env.SIMU_CONFIG ?? (existsSync(path.join(cwd, 'simu.config.json')) ? 'simu.config.json' : '');
  let fileValues: Raw = {};
  if (filePath) {
    const abs = path.resolve(cwd, filePath);
    let text: string;
    try {
      text = readFileSync(abs, 'utf8');
    } catch {
      throw new ConfigError('SIMU_CONFIG', 'environment', filePath, 'a readable JSON file');
    }
    try {
      fileValues = flatten(JSON.parse(text));
    } catch {
      throw new ConfigError('SIMU_CONFIG', 'environment', filePath, 'a file holding one JSON object');
    }
    const known = new Set<string>(SETTINGS.map((s) => s.key));
    for (const k of Object.keys(fileValues)) {
      if (!known.has(k))
        throw new ConfigError(k, filePath, fileValues[k], 'a known setting (see the README configuration table)');
    }
  }
  for (const spec of SETTINGS as readonly SettingSpec[]) {
    let raw = spec.default;
    let source = 'default';
    if (spec.key in fileValues) {
      raw = fileValues[spec.key];
      source = filePath;
    }
    if (env[spec.env] !== undefined) {
      raw = env[spec.env] as string;
      source = spec.env;
    }
    setPath(out, spec.key, parseValue(spec, raw, source));
  }
  const cfg = out as Config;
  cfg.dataDir = path.resolve(cwd, cfg.dataDir);
  if (cfg.rtpengine.portMin >= cfg.rtpengine.portMax) {
    throw new ConfigError(
      'rtpengine.portMin',
      'SIMU_RTP_PORT_MIN',
      String(cfg.rtpengine.portMin),
      'lower than rtpengine.portMax',
    );
  }
  if (!/^(auto|off|[^\s/]+:\d{1,5}\/\d{1,2})$/.test(cfg.rtpengine.redis)) {
    throw new ConfigError(
      'rtpengine.redis',
      'SIMU_RTPENGINE_REDIS',
      cfg.rtpengine.redis,
      'auto, off, or a Redis as IP:PORT/DB (e.g. 127.0.0.1:6379/1)',
    );
  }
  cfg.node.id ||= os.hostname().slice(0, 64) || 'simu';
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(cfg.node.id))
    throw new ConfigError(
      'node.id',
      'SIMU_NODE_ID',
      cfg.node.id,
      'letters, digits, dot, underscore or dash, at most 64',
    );
  cfg.numbers.defaultCountry = cfg.numbers.defaultCountry.toUpperCase();
  if (!isSupportedCountryCode(cfg.numbers.defaultCountry))
    throw new ConfigError(
      'numbers.defaultCountry',
      'SIMU_DEFAULT_COUNTRY',
      cfg.numbers.defaultCountry,
      'a country code such as KE',
    );
  const badEmergency = cfg.numbers.emergencyNumbers.find((n) => !/^\d{2,15}$/.test(n));
  if (badEmergency !== undefined)
    throw new ConfigError(
      'numbers.emergencyNumbers',
      'SIMU_EMERGENCY_NUMBERS',
      badEmergency,
      'numbers of 2 to 15 digits',
    );
  if (cfg.capture.hepUrl !== '' && !parseHepUrl(cfg.capture.hepUrl))
    throw new ConfigError(
      'capture.hepUrl',
      'SIMU_HEP_URL',
      cfg.capture.hepUrl,
      'udp:HOST:PORT (an IPv6 address in brackets), or empty for no HEP',
    );
  if (!cfg.publicBaseUrl) cfg.publicBaseUrl = `http://${cfg.publicHost}:${cfg.http.port}`;
  return cfg;
}

/**
 * A HEP collector's address as capture.hepUrl names it: `udp:HOST:PORT`, an IPv6 address in brackets; HEP over UDP
 * is what Homer's heplify-server and `sngrep -L` listen for. Undefined when it is not of that form.
 */
export function parseHepUrl(url: string): { host: string; port: number } | undefined {
  const m = /^udp:(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):(\d{1,5})$/.exec(url.trim());
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

/** The README's configuration table, made from the same list the loader reads. */
export function configTable(): string {
  const rows = (SETTINGS as readonly SettingSpec[]).map(
    (s) => `| \`${s.env}\` | \`${s.key}\` | \`${s.default === '' ? '(empty)' : s.default}\` | ${s.help} |`,
  );
  return ['| variable | file key | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}
