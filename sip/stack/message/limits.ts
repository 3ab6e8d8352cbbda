/**
 * Size caps applied to received bytes before any parsing: a message over `maxMessageBytes`, or a
 * header field over `maxHeaderLineBytes`, is refused without looking inside it. The transports apply them the
 * same way whatever the transport: a datagram or WebSocket message through `parseMessage` (which checks
 * `sizeRefusal` first), a byte stream through `StreamFramer` (which reports "too-large" and the stream is closed).
 */

/** The largest message accepted: the largest UDP datagram (RFC 3261 §18.1.1 moves larger requests to TCP). */
export const MAX_MESSAGE_BYTES = 65535;
/** The longest header field accepted, start line included, folded continuation lines counted with their field. */
export const MAX_HEADER_LINE_BYTES = 8192;
/** The most header fields accepted; each element of a comma-separated list counts as one (§7.3.1). */
export const MAX_HEADERS = 256;

export interface ParseLimits {
  /** Largest message accepted, in bytes (default `MAX_MESSAGE_BYTES`). */
  maxMessageBytes: number;
  /** Most header fields accepted (default `MAX_HEADERS`), list elements counted one by one. */
  maxHeaders: number;
  /** Longest header field, in bytes (default `MAX_HEADER_LINE_BYTES`). */
  maxHeaderLineBytes?: number;
}
export const DEFAULT_LIMITS: ParseLimits = {
  maxMessageBytes: MAX_MESSAGE_BYTES,
  maxHeaders: MAX_HEADERS,
  maxHeaderLineBytes: MAX_HEADER_LINE_BYTES,
};

const CRLF = Buffer.from('\r\n');
const CRLFCRLF = Buffer.from('\r\n\r\n');

function isWspByte(b: number | undefined): boolean {
  return b === 0x20 || b === 0x09;
}

/**
 * Why `data` (one whole message, leading CRLFs allowed) is refused before parsing, or undefined when it is
 * within the limits. One pass of native `indexOf` over the header section; the body is not looked at.
 */
export function sizeRefusal(data: Buffer, limits: ParseLimits = DEFAULT_LIMITS): string | undefined {
  if (data.length > limits.maxMessageBytes) return 'message too large';
  const maxLine = limits.maxHeaderLineBytes ?? MAX_HEADER_LINE_BYTES;
  if (data.length <= maxLine) return undefined; // no field can be longer than the whole message
  let pos = 0;
  while (pos < data.length && (data[pos] === 0x0d || data[pos] === 0x0a)) pos++;
  let field = pos;
  for (;;) {
    const eol = data.indexOf(CRLF, pos);
    if ((eol < 0 ? data.length : eol) - field > maxLine) return 'header line too long';
    if (eol <= pos) return undefined; // end of data, or the blank line that ends the header section
    pos = eol + 2;
    if (!isWspByte(data[pos])) field = pos; // a line starting with SP/HTAB continues its field (§7.3.1)
  }
}

/**
 * The incremental form of the same rule, for a stream: tracks the header section of the message being
 * received across pushes so that every byte is scanned once.
 */
export class HeaderScanner {
  /** Where the next unscanned line starts, relative to the message start. */
  #line = 0;
  /** Where the field of that line started (the field continues when the line starts with SP/HTAB). */
  #field = 0;
  /** Where to resume looking for CRLF in the current (partial) line. */
  #from = 0;
  readonly #maxLine: number;

  constructor(maxLine = MAX_HEADER_LINE_BYTES) {
    this.#maxLine = maxLine;
  }

  /**
   * Scans `head` (the bytes of the message received so far, from its first byte). Returns the index of the
   * blank line's CRLF (the body starts 2 bytes later), 'more' while the header section is incomplete, or
   * 'too-large' when a field is over the limit.
   */
  scan(head: Buffer): number | 'more' | 'too-large' {
    if (this.#from === 0) {
      // The common case, a whole header section in one push and shorter than a field may be: one search.
      const end = head.indexOf(CRLFCRLF);
      if (end >= 0 && end <= this.#maxLine) return end + 2;
    }
    for (;;) {
      const eol = head.indexOf(CRLF, this.#from);
      const field = this.#line > 0 && isWspByte(head[this.#line]) ? this.#field : this.#line;
      if ((eol < 0 ? head.length : eol) - field > this.#maxLine) return 'too-large';
      if (eol < 0) {
        this.#from = Math.max(this.#line, head.length - 1); // a CR may be the last byte received
        return 'more';
      }
      if (eol === this.#line) return eol;
      this.#field = field;
      this.#line = this.#from = eol + 2;
    }
  }

  reset(): void {
    this.#line = this.#field = this.#from = 0;
  }
}
