/**
 * What capture reads of a message's bytes without parsing it: the start line, the Call-ID and whether the To header
 * has a tag, from the header section only (compact forms `i` and `t` too, RFC 3261 §7.3.3). A message too broken to
 * show them still goes to HEP, without a call. Every message in and out passes here: one scan of the header
 * section's lines in the bytes, looking only at lines that start like the two headers read.
 */
export interface MessageHead {
  startLine: string;
  callId: string | undefined;
  /** An out-of-dialog INVITE (no To tag): the first message of a call leg. */
  opensLeg: boolean;
}

/** Header sections beyond this are not searched (the transport's own limit is larger; such messages are rare). */
const MAX_HEAD = 8192;

export function readHead(data: Buffer): MessageHead {
  // Read from the bytes: only the start line and the two values are made strings, not the header section.
  const limit = Math.min(data.length, MAX_HEAD);
  let end = data.indexOf(CRLFCRLF);
  if (end < 0 || end + 4 > limit) end = limit;
  const firstEnd = lineEnd(data, 0, end);
  const startLine = data.toString('latin1', 0, firstEnd);
  const invite = startLine.startsWith('INVITE ');
  let callId: string | undefined;
  let to: string | undefined;
  for (let at = firstEnd; at < end && (callId === undefined || (invite && to === undefined));) {
    const start = at + 2;
    const next = lineEnd(data, start, end);
    at = next;
    const c = data[start] | 0x20; // lower case for letters
    if (c !== 0x63 /* c */ && c !== 0x69 /* i */ && c !== 0x74 /* t */) continue;
    const colon = data.indexOf(0x3a, start);
    if (colon < 0 || colon > next) continue;
    const name = trimBlanks(data.toString('latin1', start, colon)).toLowerCase();
    if (callId === undefined && (name === 'call-id' || name === 'i'))
      callId = trimBlanks(data.toString('latin1', colon + 1, next)) || undefined;
    else if (invite && to === undefined && (name === 'to' || name === 't'))
      to = data.toString('latin1', colon + 1, next);
  }
  const opensLeg = invite && !/;[ \t]*tag[ \t]*=/i.test(to ?? '');
  return { startLine, callId, opensLeg };
}

const CRLF = Buffer.from('\r\n');
const CRLFCRLF = Buffer.from('\r\n\r\n');

/** Where the line starting at `from` ends (its CRLF), or `end`. */
function lineEnd(data: Buffer, from: number, end: number): number {
  const i = data.indexOf(CRLF, from);
  return i < 0 || i > end ? end : i;
}

/** Without the spaces and tabs at either end (SIP's blanks; not the other characters String.trim removes). */
function trimBlanks(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === 0x20 || s.charCodeAt(a) === 0x09)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 0x20 || s.charCodeAt(b - 1) === 0x09)) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}
