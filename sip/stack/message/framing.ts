/**
 * Framing for stream transports (RFC 3261 §18.3): splits a byte stream into whole messages using the
 * Content-Length of each, separately from parsing. Reports "need more" while a message is incomplete and
 * "too large" when it cannot fit the limit; answers keep-alive pings (RFC 5626 §4.4.1: CRLFCRLF ping, CRLF pong).
 */
export type FrameEvent =
  | { kind: 'message'; data: Buffer }
  | { kind: 'ping' } // a double CRLF: the peer wants a single CRLF back
  | { kind: 'pong' } // a lone CRLF: the answer to our ping
  | { kind: 'too-large' }
  | { kind: 'bad-framing' };

const CL_RE = /^(?:content-length|l)[ \t]*:[ \t]*(\d+)[ \t]*$/im;

export class StreamFramer {
  #buf: Buffer = Buffer.alloc(0);
  readonly #max: number;

  constructor(maxMessageBytes = 65535) {
    this.#max = maxMessageBytes;
  }

  /** Adds received bytes and returns the complete frames found; an empty array means "need more". */
  push(chunk: Buffer): FrameEvent[] {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    const out: FrameEvent[] = [];
    for (;;) {
      const buf = this.#buf;
      if (buf.length === 0) break;
      if (buf[0] === 0x0d || buf[0] === 0x0a) {
        if (startsWith(buf, '\r\n\r\n')) {
          out.push({ kind: 'ping' });
          this.#buf = buf.subarray(4);
        } else if (startsWith(buf, '\r\n')) {
          if (buf.length === 3 && buf[2] === 0x0d) break; // maybe the rest of a ping is coming
          out.push({ kind: 'pong' });
          this.#buf = buf.subarray(2);
        } else if (buf.length === 1 && buf[0] === 0x0d) {
          break;
        } else {
          this.#buf = buf.subarray(1); // a stray line end between messages
        }
        continue;
      }
      const headEnd = buf.indexOf('\r\n\r\n');
      if (headEnd < 0) {
        if (buf.length > this.#max) return this.#reset(out, 'too-large');
        break;
      }
      const m = CL_RE.exec(buf.toString('latin1', 0, headEnd));
      // §18.3: Content-Length is mandatory on a stream; without it the stream cannot be framed.
      if (!m) return this.#reset(out, 'bad-framing');
      const total = headEnd + 4 + Number(m[1]);
      if (total > this.#max) return this.#reset(out, 'too-large');
      if (buf.length < total) break;
      out.push({ kind: 'message', data: buf.subarray(0, total) });
      this.#buf = buf.subarray(total);
    }
    return out;
  }

  /** Bytes held while waiting for the rest of a message. */
  get pending(): number {
    return this.#buf.length;
  }

  #reset(out: FrameEvent[], kind: 'too-large' | 'bad-framing'): FrameEvent[] {
    this.#buf = Buffer.alloc(0);
    out.push({ kind });
    return out;
  }
}

function startsWith(buf: Buffer, s: string): boolean {
  return buf.length >= s.length && buf.toString('latin1', 0, s.length) === s;
}
