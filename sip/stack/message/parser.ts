/**
 * The parser: a pure function from bytes to a message (RFC 3261 §7, §25). It never throws; a malformed message
 * comes back as an error with the status a UAS should answer (400, 505) and, when enough of a request was
 * readable, the partial request so that the answer can be formed (§8.2). A message over the size caps of
 * limits.ts is refused (513, code SIP_TOO_LARGE) before anything in it is parsed. Framing of stream transports is
 * done before this, by `StreamFramer`. Every step is linear in the input: scans, never backtracking regexes.
 */
import { SipParseError } from '../errors.js';
import { SipHeaders } from './headers.js';
import { isDigits, isToken, trimWspEnd } from './grammar.js';
import { DEFAULT_LIMITS, sizeRefusal, type ParseLimits } from './limits.js';
import { parseNameAddr, parseVia } from './address.js';
import { parseUri, isSipUri } from './uri.js';
import { SipRequest, SipResponse, type SipMessage } from './message.js';

export type ParseResult = { ok: true; message: SipMessage } | { ok: false; error: SipParseError; request?: SipRequest };

/** Headers a message must carry exactly once (§8.1.1, §20); RFC 4475 multi01 repeats them. */
const SINGLE = ['to', 'from', 'call-id', 'cseq'] as const;

function fail(message: string, status = 400, request?: SipRequest): ParseResult {
  return { ok: false, error: new SipParseError(message, status), request };
}

/** A message refused for its size (RFC 3261 §21.5.14 513), never answered: nothing of it is trusted enough. */
function refuse(message: string): ParseResult {
  return { ok: false, error: new SipParseError(message, 513, 'SIP_TOO_LARGE') };
}

export function parseMessage(data: Buffer, limits: ParseLimits = DEFAULT_LIMITS): ParseResult {
  // Refused before any parsing: nothing of it is read, so no partial request and no answer; over UDP
  // the datagram is dropped, over a stream the framer has already closed the connection.
  const tooLarge = sizeRefusal(data, limits);
  if (tooLarge) return refuse(tooLarge);
  let start = 0;
  // §7.5: CRLFs before the start line are ignored (also keep-alive pings on a datagram).
  while (start < data.length && (data[start] === 0x0d || data[start] === 0x0a)) start++;
  let headEnd = data.indexOf('\r\n\r\n', start);
  // A datagram whose header section ends with the datagram itself (no blank line) is read as having no body.
  if (headEnd < 0 && data.length >= 2 && data[data.length - 2] === 0x0d && data[data.length - 1] === 0x0a) {
    headEnd = data.length - 2;
  }
  if (headEnd < 0) return fail('no end of header section');
  const lines = data.toString('utf8', start, headEnd).split('\r\n');
  const startLine = trimWspEnd(lines[0]); // trailing LWS tolerated (RFC 4475 trws)
  const headers = new SipHeaders();
  let malformed = 0;
  let badHeader: string | undefined;
  for (let i = 1; i < lines.length; i++) {
    let line = lines[i];
    // Line folding (§7.3.1): a line starting with whitespace continues the previous header.
    while (i + 1 < lines.length && (lines[i + 1][0] === ' ' || lines[i + 1][0] === '\t')) {
      line += ' ' + lines[++i].trim();
    }
    const colon = line.indexOf(':');
    const name = colon < 0 ? '' : trimWspEnd(line.slice(0, colon));
    if (!isToken(name)) {
      if (++malformed + headers.size > limits.maxHeaders) return refuse('too many headers');
      badHeader ??= `malformed header line ${i}`;
      continue;
    }
    if (!headers.add(name, line.slice(colon + 1).trim())) badHeader ??= `malformed list in ${name}`;
    // Each list element counts (§7.3.1): "Via: a,a,a,..." in 64 KB would otherwise be 30,000 Via entries.
    if (malformed + headers.size > limits.maxHeaders) return refuse('too many headers');
  }
  const available = data.subarray(Math.min(headEnd + 4, data.length));
  if (startLine.startsWith('SIP/')) return parseResponse(startLine, headers, available, badHeader);
  return parseRequest(startLine, headers, available, badHeader);
}

function parseRequest(line: string, headers: SipHeaders, available: Buffer, badHeader?: string): ParseResult {
  const parts = line.split(' ');
  const [method, uriText, version] = parts;
  const uri = parts.length === 3 ? parseUri(uriText) : null;
  const req = new SipRequest(method, uri ?? { scheme: 'invalid', opaque: uriText ?? '' }, headers);
  // A response can be formed whenever there is a Via to send it along (§18.2.2); other headers are copied if present.
  const partial = headers.has('via') && isToken(method) ? req : undefined;
  if (parts.length !== 3 || !isToken(method)) return fail('malformed request line', 400, partial);
  if (!/^SIP\/\d+\.\d+$/i.test(version)) return fail('malformed version', 400, partial);
  // §8.2.2: an unsupported version gets 505 (RFC 4475 badvers).
  if (version.toUpperCase() !== 'SIP/2.0') return fail('version not supported', 505, partial);
  if (!uri) return fail('malformed Request-URI', 400, partial);
  // §19.1.1 table 1: headers are not allowed in a Request-URI (RFC 4475 escruri).
  if (isSipUri(uri) && uri.headers !== undefined) return fail('headers in Request-URI', 400, partial);
  const err = badHeader ?? checkCommon(req);
  if (err) return fail(err, 400, partial);
  const cseq = req.cseq;
  if (cseq.method !== method) return fail('CSeq method does not match', 400, partial);
  const mf = headers.getAll('max-forwards');
  if (mf.length > 1 || (mf.length === 1 && !(isDigits(mf[0], 9) && Number(mf[0]) <= 255))) {
    return fail('bad Max-Forwards', 400, partial);
  }
  for (const c of headers.getAll('contact')) {
    if (c !== '*' && !parseNameAddr(c)) return fail('bad Contact', 400, partial);
  }
  const body = takeBody(headers, available);
  if (typeof body === 'string') return fail(body, 400, partial);
  req.body = body;
  return { ok: true, message: req };
}

function parseResponse(line: string, headers: SipHeaders, available: Buffer, badHeader?: string): ParseResult {
  const m = /^SIP\/2\.0 ([1-6]\d\d)(?: (.*))?$/i.exec(line);
  if (!m) return fail('malformed status line');
  const res = new SipResponse(Number(m[1]), m[2] ?? '', headers);
  const err = badHeader ?? checkCommon(res);
  if (err) return fail(err);
  const body = takeBody(headers, available);
  if (typeof body === 'string') return fail(body);
  res.body = body;
  return { ok: true, message: res };
}

function checkCommon(m: SipMessage): string | undefined {
  const h = m.headers;
  for (const name of SINGLE) {
    const n = h.count(name);
    if (n !== 1) return n === 0 ? `missing ${name}` : `repeated ${name}`;
  }
  const vias = h.getAll('via');
  if (vias.length === 0) return 'missing via';
  if (!m.topVia || !vias.every((v, i) => i === 0 || parseVia(v))) return 'malformed Via';
  if (!m.cseqOrNull) return 'malformed CSeq';
  if (!m.from) return 'malformed From';
  if (!m.to) return 'malformed To';
  if (h.get('call-id') === '') return 'empty Call-ID';
  return undefined;
}

/**
 * The body per Content-Length (§18.3, §20.14): a shorter length truncates (extra datagram bytes are discarded,
 * RFC 4475 dblreq), a longer one than was received is an error (clerr), as are repeated or non-numeric values
 * (mcl01, ncl). Without Content-Length the rest of the datagram is the body.
 */
function takeBody(h: SipHeaders, available: Buffer): Buffer | string {
  const cl = h.getAll('content-length');
  if (cl.length === 0) return available;
  if (cl.length > 1) return 'repeated Content-Length';
  if (!isDigits(cl[0], 10)) return 'bad Content-Length';
  const n = Number(cl[0]);
  if (n > available.length) return 'Content-Length exceeds body';
  return available.subarray(0, n);
}
