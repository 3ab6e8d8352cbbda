/**
 * Typed views of the headers every transaction needs: name-addr / addr-spec (From, To, Contact, Route,
 * Record-Route; RFC 3261 §20.10, §25.1), Via with received/rport (§18.2.1, RFC 3581) and CSeq (§20.16).
 */
import {
  formatParams,
  isToken,
  isWsp,
  parseParams,
  quote,
  skipQuoted,
  skipWsp,
  trimWspEnd,
  unquote,
  type Params,
} from './grammar.js';
import { formatUri, parseHostPort, parseUri, type Uri } from './uri.js';

export interface NameAddr {
  displayName?: string; // unquoted
  uri: Uri;
  params: Params; // header parameters (tag, expires, q, ...)
}

/**
 * Parses `"Name" <uri>;p=v`, `Name <uri>;p=v` or `uri;p=v`. In the addr-spec form, parameters after the URI
 * belong to the header, and the URI may not carry '?' headers, ',' or ';'-params of its own (§20.10).
 */
export function parseNameAddr(value: string): NameAddr | null {
  const s = value.trim();
  let displayName: string | undefined;
  let i = 0;
  if (s[0] === '"') {
    const end = skipQuoted(s, 0);
    if (end < 0) return null;
    displayName = unquote(s.slice(0, end));
    i = end;
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (s[i] !== '<') return null;
  }
  const lt = s.indexOf('<', i);
  if (lt >= 0) {
    if (displayName === undefined) {
      const dn = s.slice(0, lt).trim();
      if (dn !== '') {
        // display-name = *(token LWS): each word must be a token
        if (!dn.split(/[ \t]+/).every(isToken)) return null;
        displayName = dn;
      }
    } else if (lt !== i) return null;
    const gt = s.indexOf('>', lt);
    if (gt < 0) return null;
    // Tolerated: LWS just inside the brackets (RFC 4475 badaspec); a strict reading would reject it.
    const uri = parseUri(s.slice(lt + 1, gt).trim());
    const params = parseParams(s.slice(gt + 1));
    if (!uri || !params) return null;
    return { displayName, uri, params };
  }
  if (displayName !== undefined) return null;
  const semi = s.indexOf(';');
  const uriText = (semi < 0 ? s : s.slice(0, semi)).trim();
  if (/[?,]/.test(uriText)) return null;
  const uri = parseUri(uriText);
  const params = parseParams(semi < 0 ? '' : s.slice(semi));
  if (!uri || !params) return null;
  return { uri, params };
}

export function formatNameAddr(na: NameAddr): string {
  const dn = na.displayName !== undefined ? quote(na.displayName) + ' ' : '';
  return `${dn}<${formatUri(na.uri)}>${formatParams(na.params)}`;
}

export interface Via {
  protocol: string; // SIP/2.0
  transport: string; // upper case: UDP, TCP, TLS, WS, WSS, SCTP, ...
  host: string;
  port?: number;
  params: Params;
}

/**
 * via-parm = sent-protocol LWS sent-by *( SEMI via-params ) (§25.1), with LWS allowed around the slashes and
 * the colon (SLASH, COLON = SWS x SWS; RFC 4475 wsinv). One left-to-right scan: the regex it replaces
 * backtracked quadratically on a long run of blanks, so one message could hold the event loop for seconds.
 */
export function parseVia(value: string): Via | null {
  const s = value.trim();
  const protocol: string[] = [];
  let i = 0;
  for (let k = 0; k < 3; k++) {
    if (k > 0) {
      i = skipWsp(s, i);
      if (s[i] !== '/') return null;
      i = skipWsp(s, i + 1);
    }
    const from = i;
    while (i < s.length && !isWsp(s.charCodeAt(i)) && s[i] !== '/' && s[i] !== ';') i++;
    const part = s.slice(from, i);
    if (!isToken(part)) return null; // protocol-name, protocol-version and transport are tokens
    protocol.push(part);
  }
  if (!isWsp(s.charCodeAt(i))) return null;
  i = skipWsp(s, i);
  const semi = s.indexOf(';', i);
  const sentBy = joinSentBy(trimWspEnd(s.slice(i, semi < 0 ? s.length : semi)));
  const hp = sentBy === null ? null : parseHostPort(sentBy);
  const params = parseParams(semi < 0 ? '' : s.slice(semi));
  if (!hp || !params) return null;
  const [name, version, transport] = protocol;
  return { protocol: `${name}/${version}`.toUpperCase(), transport: transport.toUpperCase(), ...hp, params };
}

/** `host SWS ":" SWS port` to `host:port`; blanks anywhere else in sent-by make it invalid (null). */
function joinSentBy(s: string): string | null {
  let end = 0;
  if (s[0] === '[')
    end = s.indexOf(']') + 1; // IPv6 reference: its colons are not the port's
  else while (end < s.length && s[end] !== ':' && !isWsp(s.charCodeAt(end))) end++;
  if (end === 0) return null;
  let i = skipWsp(s, end);
  if (i === s.length) return s.slice(0, end);
  if (s[i] !== ':') return null;
  i = skipWsp(s, i + 1);
  return s.slice(0, end) + ':' + s.slice(i);
}

export function formatVia(v: Via): string {
  return `${v.protocol}/${v.transport} ${v.host}${v.port !== undefined ? ':' + v.port : ''}${formatParams(v.params)}`;
}

export interface CSeq {
  seq: number;
  method: string;
}

/** CSeq numbers must be below 2^31 (§8.1.1.5). */
export function parseCSeq(value: string): CSeq | null {
  const s = value.trim();
  let i = 0;
  while (i < s.length && i <= 10 && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39) i++;
  if (i === 0 || i > 10 || !isWsp(s.charCodeAt(i))) return null;
  const method = s.slice(skipWsp(s, i));
  if (!isToken(method)) return null;
  const seq = Number(s.slice(0, i));
  if (seq >= 2 ** 31) return null;
  return { seq, method };
}

/** The RFC 3261 branch magic cookie (§8.1.1.7); a branch without it is matched the RFC 2543 way (§17.2.3). */
export const BRANCH_COOKIE = 'z9hG4bK';
