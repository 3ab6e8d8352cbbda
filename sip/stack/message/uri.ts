/**
 * URIs: sip and sips (RFC 3261 §19.1), tel (RFC 3966), anything else kept opaque so that a request with an
 * unknown scheme can still be answered 416 (§8.2.2.1).
 */
import { formatParams, type Params } from './grammar.js';

export interface SipUri {
  readonly scheme: 'sip' | 'sips';
  user?: string; // kept escaped, as received
  password?: string;
  host: string; // lower-cased; IPv6 references keep their brackets
  port?: number;
  params: Params; // uri-parameters, names lower-cased
  headers?: string; // the raw `?h=v&...` part without the '?'
}
export interface TelUri {
  readonly scheme: 'tel';
  number: string;
  params: Params;
}
export interface OpaqueUri {
  readonly scheme: string;
  opaque: string;
}
export type Uri = SipUri | TelUri | OpaqueUri;

export function isSipUri(u: Uri): u is SipUri {
  return u.scheme === 'sip' || u.scheme === 'sips';
}

const SCHEME_RE = /^([A-Za-z][A-Za-z0-9+\-.]*):/;
// user = 1*( unreserved / escaped / user-unreserved ), unreserved includes mark "-_.!~*'()"
const USER_RE = /^(?:[A-Za-z0-9\-_.!~*'()&=+$,;?/]|%[0-9A-Fa-f]{2})+$/;
const PASSWORD_RE = /^(?:[A-Za-z0-9\-_.!~*'()&=+$,]|%[0-9A-Fa-f]{2})*$/;
// RFC 3261 §25.1 wants the last label (toplabel) to begin with a letter; like RFC 1123 §2.1 hosts and the stacks
// phones meet (Kamailio, Asterisk), a last label beginning with a digit is taken too unless it is all digits (which
// would read as a mangled IPv4 address): a bare account uuid such as `508f…-…` is a host phones send.
const HOSTNAME_RE =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)*(?=[A-Za-z0-9-]*[A-Za-z-])[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.?$/;
const IPV4_RE = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const IPV6_RE = /^\[[0-9A-Fa-f:.]+\]$/;
const PARAMCHAR_RE = /^(?:[A-Za-z0-9\-_.!~*'()[\]/:&+$]|%[0-9A-Fa-f]{2})+$/;
/** The common case of PARAMCHAR_RE (no escapes) as one character class: a linear scan, no alternation per char. */
const PLAIN_PARAMCHARS_RE = /^[A-Za-z0-9\-_.!~*'()[\]/:&+$]+$/;
const isParamChars = (s: string): boolean => PLAIN_PARAMCHARS_RE.test(s) || PARAMCHAR_RE.test(s);
const HEADERS_RE = /^(?:[A-Za-z0-9\-_.!~*'()[\]/?:+$=&]|%[0-9A-Fa-f]{2})*$/;

export function isValidHost(host: string): boolean {
  return IPV6_RE.test(host) || IPV4_RE.test(host) || HOSTNAME_RE.test(host);
}

/** Parses `host[:port]`; returns null on a bad host or port. */
export function parseHostPort(s: string): { host: string; port?: number } | null {
  let host: string;
  let rest: string;
  if (s.startsWith('[')) {
    const end = s.indexOf(']');
    if (end < 0) return null;
    host = s.slice(0, end + 1);
    rest = s.slice(end + 1);
  } else {
    const colon = s.indexOf(':');
    host = colon < 0 ? s : s.slice(0, colon);
    rest = colon < 0 ? '' : s.slice(colon);
  }
  if (!isValidHost(host)) return null;
  if (rest === '') return { host: host.toLowerCase() };
  if (!/^:\d{1,5}$/.test(rest)) return null;
  const port = Number(rest.slice(1));
  if (port > 65535) return null;
  return { host: host.toLowerCase(), port };
}

function parseUriParams(s: string): Params | null {
  const params: Params = new Map();
  if (s === '') return params;
  for (const part of s.split(';').slice(1)) {
    const eq = part.indexOf('=');
    const name = eq < 0 ? part : part.slice(0, eq);
    const value = eq < 0 ? null : part.slice(eq + 1);
    if (!isParamChars(name) || (value !== null && !isParamChars(value))) return null;
    params.set(name.toLowerCase(), value);
  }
  return params;
}

export function parseUri(text: string): Uri | null {
  const m = SCHEME_RE.exec(text);
  if (!m) return null;
  const scheme = m[1].toLowerCase();
  const rest = text.slice(m[0].length);
  if (/[\s<>"]/.test(rest) || rest === '') return null;
  if (scheme === 'sip' || scheme === 'sips') return parseSip(scheme, rest);
  if (scheme === 'tel') {
    const semi = rest.indexOf(';');
    const number = semi < 0 ? rest : rest.slice(0, semi);
    const params = parseUriParams(semi < 0 ? '' : rest.slice(semi));
    if (!params || !/^\+?[0-9A-Fa-f*#\-.()pw]+$/.test(number)) return null;
    return { scheme, number, params };
  }
  return { scheme, opaque: rest };
}

/** Stands in for a SIP URI's parameters while it is parsed; every URI returned has its own (parseUriParams). */
const PARSING: Params = new Map();

function parseSip(scheme: 'sip' | 'sips', rest: string): SipUri | null {
  const uri: SipUri = { scheme, host: '', params: PARSING };
  const at = rest.indexOf('@');
  let hostPart = rest;
  if (at >= 0) {
    const userinfo = rest.slice(0, at);
    hostPart = rest.slice(at + 1);
    const colon = userinfo.indexOf(':');
    const user = colon < 0 ? userinfo : userinfo.slice(0, colon);
    if (!USER_RE.test(user)) return null;
    uri.user = user;
    if (colon >= 0) {
      const password = userinfo.slice(colon + 1);
      if (!PASSWORD_RE.test(password)) return null;
      uri.password = password;
    }
  }
  const q = hostPart.indexOf('?');
  if (q >= 0) {
    uri.headers = hostPart.slice(q + 1);
    if (!HEADERS_RE.test(uri.headers)) return null;
    hostPart = hostPart.slice(0, q);
  }
  const semi = hostPart.indexOf(';');
  const hp = parseHostPort(semi < 0 ? hostPart : hostPart.slice(0, semi));
  if (!hp) return null;
  uri.host = hp.host;
  if (hp.port !== undefined) uri.port = hp.port;
  const params = parseUriParams(semi < 0 ? '' : hostPart.slice(semi));
  if (!params) return null;
  uri.params = params;
  return uri;
}

export function formatUri(u: Uri): string {
  if (isSipUri(u)) {
    let s = u.scheme + ':';
    if (u.user !== undefined) s += u.user + (u.password !== undefined ? ':' + u.password : '') + '@';
    s += u.host;
    if (u.port !== undefined) s += ':' + u.port;
    s += formatParams(u.params);
    if (u.headers !== undefined) s += '?' + u.headers;
    return s;
  }
  if (u.scheme === 'tel') return 'tel:' + (u as TelUri).number + formatParams((u as TelUri).params);
  return u.scheme + ':' + (u as OpaqueUri).opaque;
}

/** Builds a sip URI from parts, for callers that address a host directly. */
export function sipUri(host: string, opts: { user?: string; port?: number; transport?: string } = {}): SipUri {
  const params: Params = new Map();
  if (opts.transport) params.set('transport', opts.transport.toLowerCase());
  return { scheme: 'sip', user: opts.user, host, port: opts.port, params };
}
