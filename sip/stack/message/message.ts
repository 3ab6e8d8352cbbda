/**
 * The message model: requests and responses with an ordered header list and a byte body, typed accessors for
 * the headers the transaction and dialog layers need, and a serializer (RFC 3261 §7).
 */
import { displayName, SipHeaders } from './headers.js';
import { parseCSeq, parseNameAddr, parseVia, type CSeq, type NameAddr, type Via } from './address.js';
import { formatUri, type Uri } from './uri.js';

/** Where a received message came from; `flowId` names the connection (stream transports) it arrived on. */
export interface MessageSource {
  transport: TransportName;
  address: string;
  port: number;
  flowId: string;
  localAddress?: string;
  localPort?: number;
  /** A new INVITE the UDP front's gate already admitted (transport/udp-front.ts): not to be asked again. */
  gated?: boolean;
}
export type TransportName = 'UDP' | 'TCP' | 'TLS' | 'WS' | 'WSS';

const EMPTY = Buffer.alloc(0);

type MemoKind = 'cseq' | 'from' | 'to' | 'via' | 'contact';

abstract class SipMessageBase {
  headers: SipHeaders;
  body: Buffer;
  source?: MessageSource;

  constructor(headers?: SipHeaders, body?: Buffer | string) {
    this.headers = headers ?? new SipHeaders();
    this.body = body === undefined ? EMPTY : typeof body === 'string' ? Buffer.from(body) : body;
  }

  #memo?: Partial<Record<MemoKind, [raw: string, value: unknown]>>;

  /** Parses a header value once per distinct raw value (the transaction and UA layers read them often). */
  protected memo<T>(kind: MemoKind, raw: string, parse: (s: string) => T): T {
    this.#memo ??= {};
    const hit = this.#memo[kind];
    if (hit && hit[0] === raw) return hit[1] as T;
    const v = parse(raw);
    this.#memo[kind] = [raw, v];
    return v;
  }

  /**
   * Forgets parsed header views. A transaction that only waits out its timers calls this so that tens of
   * thousands of idle transactions under load hold bytes, not object graphs; views are re-parsed on demand.
   */
  dropParsedViews(): void {
    this.#memo = undefined;
  }

  get callId(): string {
    return this.headers.get('call-id') ?? '';
  }
  /** The CSeq, or null when it is missing or malformed. */
  get cseqOrNull(): CSeq | null {
    return this.memo('cseq', this.headers.get('cseq') ?? '', parseCSeq);
  }
  get cseq(): CSeq {
    return this.cseqOrNull ?? { seq: 0, method: '' };
  }
  get from(): NameAddr | null {
    return this.memo('from', this.headers.get('from') ?? '', parseNameAddr);
  }
  get to(): NameAddr | null {
    return this.memo('to', this.headers.get('to') ?? '', parseNameAddr);
  }
  get fromTag(): string | undefined {
    return this.from?.params.get('tag') ?? undefined;
  }
  get toTag(): string | undefined {
    return this.to?.params.get('tag') ?? undefined;
  }
  get topVia(): Via | null {
    return this.memo('via', this.headers.get('via') ?? '', parseVia);
  }
  get contact(): NameAddr | null {
    const c = this.headers.get('contact');
    return c === undefined ? null : this.memo('contact', c, parseNameAddr);
  }
  get contentType(): string | undefined {
    return this.headers.get('content-type')?.split(';')[0].trim().toLowerCase();
  }
  /** The body as text, for SDP and other text bodies. */
  get text(): string {
    return this.body.toString('utf8');
  }

  protected abstract startLine(): string;

  /** Serializes with canonical header names and a Content-Length computed from the body. */
  toBuffer(): Buffer {
    let head = this.startLine() + '\r\n';
    for (const [name, value] of this.headers.entries()) {
      if (name === 'content-length') continue;
      head += displayName(name) + ': ' + value + '\r\n';
    }
    head += 'Content-Length: ' + this.body.length + '\r\n\r\n';
    if (this.body.length === 0) return Buffer.from(head);
    return Buffer.concat([Buffer.from(head), this.body]);
  }

  toString(): string {
    return this.toBuffer().toString('utf8');
  }
}

export class SipRequest extends SipMessageBase {
  method: string;
  uri: Uri;
  readonly isRequest = true as const;

  constructor(method: string, uri: Uri, headers?: SipHeaders, body?: Buffer | string) {
    super(headers, body);
    this.method = method;
    this.uri = uri;
  }

  protected startLine(): string {
    return `${this.method} ${formatUri(this.uri)} SIP/2.0`;
  }

  get maxForwards(): number | undefined {
    const v = this.headers.get('max-forwards');
    return v === undefined ? undefined : Number(v);
  }

  clone(): SipRequest {
    const r = new SipRequest(this.method, structuredClone(this.uri), this.headers.clone(), this.body);
    r.source = this.source;
    return r;
  }
}

export class SipResponse extends SipMessageBase {
  status: number;
  reason: string;
  readonly isRequest = false as const;

  constructor(status: number, reason: string, headers?: SipHeaders, body?: Buffer | string) {
    super(headers, body);
    this.status = status;
    this.reason = reason;
  }

  protected startLine(): string {
    return `SIP/2.0 ${this.status} ${this.reason}`;
  }
}

export type SipMessage = SipRequest | SipResponse;

/** Standard reason phrases (RFC 3261 §21) for the statuses the stack itself sends. */
export const REASONS: Record<number, string> = {
  100: 'Trying',
  180: 'Ringing',
  183: 'Session Progress',
  200: 'OK',
  202: 'Accepted',
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  407: 'Proxy Authentication Required',
  408: 'Request Timeout',
  415: 'Unsupported Media Type',
  416: 'Unsupported URI Scheme',
  420: 'Bad Extension',
  422: 'Session Interval Too Small',
  480: 'Temporarily Unavailable',
  481: 'Call/Transaction Does Not Exist',
  482: 'Loop Detected',
  483: 'Too Many Hops',
  486: 'Busy Here',
  487: 'Request Terminated',
  488: 'Not Acceptable Here',
  491: 'Request Pending',
  500: 'Server Internal Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
  505: 'Version Not Supported',
  513: 'Message Too Large',
  603: 'Decline',
};

/**
 * Builds a response to `req` as a UAS does (§8.2.6.2): Via, From, Call-ID and CSeq copied, To copied with a
 * tag added when given and not already present.
 */
export function createResponse(req: SipRequest, status: number, reason?: string, toTag?: string): SipResponse {
  const h = new SipHeaders();
  for (const v of req.headers.getAll('via')) h.append('via', v);
  h.append('from', req.headers.get('from') ?? '');
  let to = req.headers.get('to') ?? '';
  if (toTag && status > 100 && !/;\s*tag=/i.test(to)) to += ';tag=' + toTag;
  h.append('to', to);
  h.append('call-id', req.callId);
  h.append('cseq', req.headers.get('cseq') ?? '');
  // §8.2.6.1: a 100 Trying carries the Timestamp of the request.
  const ts = req.headers.get('timestamp');
  if (ts !== undefined && status === 100) h.append('timestamp', ts);
  return new SipResponse(status, reason ?? REASONS[status] ?? 'Unknown', h);
}
