/**
 * Bencode (the BitTorrent encoding) as used by the rtpengine ng protocol: integers, byte strings, lists and
 * dictionaries. Strings decode as UTF-8 (SDP is ASCII); dictionary keys are sorted on encode as the format asks.
 *
 * Encoding writes into one reused scratch buffer and copies the result out once, so a message costs one Buffer
 * however many keys it has; decoding walks the bytes with a cursor rather than allocating a pair per value.
 */
export type BValue = string | number | Buffer | BValue[] | { [key: string]: BValue | undefined };

let scratch = Buffer.allocUnsafe(16 * 1024);
let at = 0;

/** The encoding of `value`, after `prefix` (ASCII, e.g. an ng cookie and its space) when given. */
export function bencode(value: BValue, prefix?: string): Buffer {
  at = 0;
  if (prefix !== undefined) writeAscii(prefix);
  encodeInto(value);
  const out = Buffer.allocUnsafe(at);
  scratch.copy(out, 0, 0, at);
  if (scratch.length > 256 * 1024) scratch = Buffer.allocUnsafe(16 * 1024); // one huge message keeps no memory
  return out;
}

function reserve(bytes: number): void {
  if (at + bytes <= scratch.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(scratch.length * 2, at + bytes));
  scratch.copy(bigger, 0, 0, at);
  scratch = bigger;
}

/** Short strings that are ASCII (keys, flags, tags) byte by byte; anything else through the UTF-8 encoder. */
function writeAscii(s: string): void {
  reserve(s.length);
  for (let i = 0; i < s.length; i++) scratch[at++] = s.charCodeAt(i);
}

function writeDecimal(n: number): void {
  if (n >= 0 && n < 10) {
    reserve(1);
    scratch[at++] = 0x30 + n;
  } else writeAscii(String(n));
}

function writeString(s: string): void {
  const n = s.length;
  if (n <= 64) {
    let ascii = true;
    for (let i = 0; i < n; i++) {
      if (s.charCodeAt(i) > 0x7f) {
        ascii = false;
        break;
      }
    }
    if (ascii) {
      writeDecimal(n);
      reserve(n + 1);
      scratch[at++] = 0x3a; // ':'
      for (let i = 0; i < n; i++) scratch[at++] = s.charCodeAt(i);
      return;
    }
  }
  const bytes = Buffer.byteLength(s, 'utf8');
  writeDecimal(bytes);
  reserve(bytes + 1);
  scratch[at++] = 0x3a;
  at += scratch.write(s, at, bytes, 'utf8');
}

function writeByte(c: number): void {
  reserve(1);
  scratch[at++] = c;
}

function encodeInto(value: BValue): void {
  if (typeof value === 'string') {
    writeString(value);
  } else if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw new TypeError(`bencode: not an integer: ${value}`);
    writeByte(0x69); // 'i'
    writeAscii(String(value));
    writeByte(0x65); // 'e'
  } else if (Buffer.isBuffer(value)) {
    writeDecimal(value.length);
    reserve(value.length + 1);
    scratch[at++] = 0x3a;
    at += value.copy(scratch, at);
  } else if (Array.isArray(value)) {
    writeByte(0x6c); // 'l'
    for (const item of value) encodeInto(item);
    writeByte(0x65);
  } else {
    writeByte(0x64); // 'd'
    for (const key of Object.keys(value).sort()) {
      const item = value[key];
      if (item === undefined) continue;
      writeString(key);
      encodeInto(item);
    }
    writeByte(0x65);
  }
}

export class BencodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BencodeError';
  }
}

/** The decoder's cursor: decodeAt reads the value at `pos` and leaves `pos` just past it. */
let pos = 0;

/** Decode one value; trailing bytes are an error. Strings come back as JS strings. */
export function bdecode(bytes: Buffer): unknown {
  pos = 0;
  const value = decodeAt(bytes);
  if (pos !== bytes.length) throw new BencodeError(`bencode: ${bytes.length - pos} trailing bytes`);
  return value;
}

/** The non-negative decimal in b[from, to), or NaN when it is not all digits. */
function digits(b: Buffer, from: number, to: number): number {
  if (from >= to || to - from > 15) return Number.NaN;
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = b[i]! - 0x30;
    if (d < 0 || d > 9) return Number.NaN;
    n = n * 10 + d;
  }
  return n;
}

function decodeAt(b: Buffer): unknown {
  if (pos >= b.length) throw new BencodeError('bencode: truncated');
  const c = b[pos]!;
  if (c >= 0x30 && c <= 0x39) {
    const colon = b.indexOf(0x3a, pos);
    if (colon < 0) throw new BencodeError('bencode: bad string length');
    let len = digits(b, pos, colon);
    if (Number.isNaN(len)) len = Number(b.toString('ascii', pos, colon));
    const start = colon + 1;
    if (!Number.isInteger(len) || start + len > b.length) throw new BencodeError('bencode: truncated string');
    pos = start + len;
    return b.toString('utf8', start, pos);
  }
  if (c === 0x64 /* d */) {
    const dict: Record<string, unknown> = {};
    pos++;
    while (b[pos] !== 0x65) {
      const key = decodeAt(b);
      if (typeof key !== 'string') throw new BencodeError('bencode: dictionary key not a string');
      dict[key] = decodeAt(b);
    }
    pos++;
    return dict;
  }
  if (c === 0x69 /* i */) {
    const end = b.indexOf(0x65, pos);
    if (end < 0) throw new BencodeError('bencode: unterminated integer');
    let n = digits(b, pos + 1, end);
    if (Number.isNaN(n)) n = Number(b.toString('ascii', pos + 1, end));
    if (!Number.isFinite(n)) throw new BencodeError('bencode: bad integer');
    pos = end + 1;
    return n;
  }
  if (c === 0x6c /* l */) {
    const list: unknown[] = [];
    pos++;
    while (b[pos] !== 0x65) list.push(decodeAt(b));
    pos++;
    return list;
  }
  throw new BencodeError(`bencode: unexpected byte 0x${c.toString(16)} at ${pos}`);
}
