/**
 * Bencode (the BitTorrent encoding) as used by the rtpengine ng protocol: integers, byte strings, lists and
 * dictionaries. Strings decode as UTF-8 (SDP is ASCII); dictionary keys are sorted on encode as the format asks.
 */
export type BValue = string | number | Buffer | BValue[] | { [key: string]: BValue | undefined };

export function bencode(value: BValue): Buffer {
  const parts: Buffer[] = [];
  encodeInto(value, parts);
  return Buffer.concat(parts);
}

function encodeInto(value: BValue, parts: Buffer[]): void {
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw new TypeError(`bencode: not an integer: ${value}`);
    parts.push(Buffer.from(`i${value}e`));
  } else if (typeof value === 'string' || Buffer.isBuffer(value)) {
    const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
    parts.push(Buffer.from(`${bytes.length}:`), bytes);
  } else if (Array.isArray(value)) {
    parts.push(Buffer.from('l'));
    for (const item of value) encodeInto(item, parts);
    parts.push(Buffer.from('e'));
  } else {
    parts.push(Buffer.from('d'));
    for (const key of Object.keys(value).sort()) {
      const item = value[key];
      if (item === undefined) continue;
      encodeInto(key, parts);
      encodeInto(item, parts);
    }
    parts.push(Buffer.from('e'));
  }
}

export class BencodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BencodeError';
  }
}

/** Decode one value; trailing bytes are an error. Strings come back as JS strings. */
export function bdecode(bytes: Buffer): unknown {
  const [value, end] = decodeAt(bytes, 0);
  if (end !== bytes.length) throw new BencodeError(`bencode: ${bytes.length - end} trailing bytes`);
  return value;
}

function decodeAt(b: Buffer, pos: number): [unknown, number] {
  if (pos >= b.length) throw new BencodeError('bencode: truncated');
  const c = b[pos];
  if (c === 0x69 /* i */) {
    const end = b.indexOf(0x65, pos);
    if (end < 0) throw new BencodeError('bencode: unterminated integer');
    const n = Number(b.toString('ascii', pos + 1, end));
    if (!Number.isFinite(n)) throw new BencodeError('bencode: bad integer');
    return [n, end + 1];
  }
  if (c === 0x6c /* l */) {
    const list: unknown[] = [];
    let p = pos + 1;
    while (b[p] !== 0x65) {
      const [item, next] = decodeAt(b, p);
      list.push(item);
      p = next;
    }
    return [list, p + 1];
  }
  if (c === 0x64 /* d */) {
    const dict: Record<string, unknown> = {};
    let p = pos + 1;
    while (b[p] !== 0x65) {
      const [key, afterKey] = decodeAt(b, p);
      if (typeof key !== 'string') throw new BencodeError('bencode: dictionary key not a string');
      const [item, next] = decodeAt(b, afterKey);
      dict[key] = item;
      p = next;
    }
    return [dict, p + 1];
  }
  if (c !== undefined && c >= 0x30 && c <= 0x39) {
    const colon = b.indexOf(0x3a, pos);
    if (colon < 0) throw new BencodeError('bencode: bad string length');
    const len = Number(b.toString('ascii', pos, colon));
    const start = colon + 1;
    if (!Number.isInteger(len) || start + len > b.length) throw new BencodeError('bencode: truncated string');
    return [b.toString('utf8', start, start + len), start + len];
  }
  throw new BencodeError(`bencode: unexpected byte 0x${(c ?? 0).toString(16)} at ${pos}`);
}
