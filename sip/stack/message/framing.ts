/**
 * Framing for stream transports (RFC 3261 §18.3): splits a byte stream into whole messages using the
 * Content-Length of each, separately from parsing. Reports "need more" while a message is incomplete and
 * "too large" when it cannot fit the message limit or a header field is over the line limit (limits.ts), as
 * soon as that is known; answers keep-alive pings (RFC 5626 §4.4.1: CRLFCRLF ping, CRLF pong).
 */
import { isDigits, skipWsp, trimWspEnd } from './grammar.js';
import { HeaderScanner, MAX_HEADER_LINE_BYTES, MAX_MESSAGE_BYTES } from './limits.js';

export type FrameEvent =
  | { kind: 'message'; data: Buffer }
  | { kind: 'ping' } // a double CRLF: the peer wants a single CRLF back
  | { kind: 'pong' } // a lone CRLF: the answer to our ping
  | { kind: 'too-large' }
  | { kind: 'bad-framing' };

/**
 * The bytes received and not yet framed live in `#store[#start, #end)`. Appending writes past `#end` or moves
 * to a buffer twice the size, never over bytes already handed out as a message, so a stream sent one byte at a
 * time costs linear time (the earlier `Buffer.concat` per chunk was quadratic) and emitted messages need no copy.
 */
export class StreamFramer {
  #store: Buffer = Buffer.alloc(0);
  #start = 0;
  #end = 0;
  readonly #max: number;
  readonly #head: HeaderScanner;
  /** The length of the message being received, once its header section is complete. */
  #total: number | undefined;

  constructor(maxMessageBytes = MAX_MESSAGE_BYTES, maxHeaderLineBytes = MAX_HEADER_LINE_BYTES) {
    this.#max = maxMessageBytes;
    this.#head = new HeaderScanner(maxHeaderLineBytes);
  }

  /** Adds received bytes and returns the complete frames found; an empty array means "need more". */
  push(chunk: Buffer): FrameEvent[] {
    this.#append(chunk);
    const out: FrameEvent[] = [];
    for (;;) {
      const buf = this.#store.subarray(this.#start, this.#end);
      if (buf.length === 0) break;
      if (buf[0] === 0x0d || buf[0] === 0x0a) {
        if (startsWith(buf, '\r\n\r\n')) {
          out.push({ kind: 'ping' });
          this.#start += 4;
        } else if (startsWith(buf, '\r\n')) {
          if (buf.length === 3 && buf[2] === 0x0d) break; // maybe the rest of a ping is coming
          out.push({ kind: 'pong' });
          this.#start += 2;
        } else if (buf.length === 1 && buf[0] === 0x0d) {
          break;
        } else {
          this.#start += 1; // a stray line end between messages
        }
        continue;
      }
      if (this.#total === undefined) {
        // The header section is scanned as it arrives: a field over the line cap or a section over the message
        // cap is refused before the rest is waited for.
        const blank = this.#head.scan(buf.length > this.#max ? buf.subarray(0, this.#max + 1) : buf);
        if (blank === 'too-large') return this.#reset(out, 'too-large');
        if (blank === 'more') {
          if (buf.length > this.#max) return this.#reset(out, 'too-large');
          break;
        }
        const length = contentLength(buf.toString('latin1', 0, blank));
        // §18.3: Content-Length is mandatory on a stream; without it the stream cannot be framed.
        if (length === undefined) return this.#reset(out, 'bad-framing');
        this.#total = blank + 2 + length;
        if (this.#total > this.#max) return this.#reset(out, 'too-large');
      }
      const total = this.#total;
      if (buf.length < total) break;
      out.push({ kind: 'message', data: buf.subarray(0, total) });
      this.#start += total;
      this.#total = undefined;
      this.#head.reset();
    }
    if (this.#start === this.#end) this.#release();
    return out;
  }

  /** Bytes held while waiting for the rest of a message. */
  get pending(): number {
    return this.#end - this.#start;
  }

  #append(chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (this.#start === this.#end) {
      this.#store = chunk; // adopted as is; its capacity is its length, so nothing is ever written into it
      this.#start = 0;
      this.#end = chunk.length;
      return;
    }
    if (this.#end + chunk.length > this.#store.length) {
      const held = this.#end - this.#start;
      const next = Buffer.allocUnsafe(Math.max(2 * (held + chunk.length), 4096));
      this.#store.copy(next, 0, this.#start, this.#end);
      this.#store = next;
      this.#start = 0;
      this.#end = held;
    }
    chunk.copy(this.#store, this.#end);
    this.#end += chunk.length;
  }

  #release(): void {
    this.#store = Buffer.alloc(0);
    this.#start = this.#end = 0;
  }

  #reset(out: FrameEvent[], kind: 'too-large' | 'bad-framing'): FrameEvent[] {
    this.#release();
    this.#total = undefined;
    this.#head.reset();
    out.push({ kind });
    return out;
  }
}

/**
 * The first Content-Length (or compact `l`) of a header section, by a scan of its lines; undefined when there
 * is none or its value is not digits. Any number of digits is read: one too large for the limit is refused.
 */
function contentLength(head: string): number | undefined {
  let pos = 0;
  while (pos < head.length) {
    let eol = head.indexOf('\r\n', pos);
    if (eol < 0) eol = head.length;
    const colon = head.indexOf(':', pos);
    if (colon >= 0 && colon < eol) {
      const name = trimWspEnd(head.slice(pos, colon)).toLowerCase();
      if (name === 'content-length' || name === 'l') {
        const value = trimWspEnd(head.slice(skipWsp(head, colon + 1), eol));
        return isDigits(value, value.length) ? Number(value) : undefined;
      }
    }
    pos = eol + 2;
  }
  return undefined;
}

function startsWith(buf: Buffer, s: string): boolean {
  return buf.length >= s.length && buf.toString('latin1', 0, s.length) === s;
}
