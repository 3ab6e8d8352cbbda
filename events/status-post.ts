import { OutboundUrlError, UrlPolicy, guardedRequest, requestUrl } from '../kit/index.js';
import { signWebhook } from './signing.js';

/**
 * A status callback's reply body is read and dropped up to this size (its connection is kept); a longer one closes
 * the connection.
 */
const IGNORED_BODY_BYTES = 64 * 1024;

/** One attempt to deliver a status callback: its stored URL, body and event name, and the account's secret. */
export interface StatusPost {
  readonly url: string;
  readonly body: string;
  readonly event: string;
  readonly secret: string;
}

export interface StatusPostOptions {
  readonly policy: UrlPolicy;
  /** The whole attempt's deadline. */
  readonly timeoutMs: number;
  /** Now, in milliseconds since the epoch: the X-Voice-Timestamp header. */
  readonly now: number;
}

/**
 * How an attempt ended. `error` reaches the account (WH.0400 lastError): the guarded fetch's stable codes, `HTTP
 * <status>`, `timeout` or URL_UNREACHABLE, never a socket error of an address it refused (URL_FORBIDDEN reads the
 * same whatever listens there); `detail` is for logs only.
 */
export type StatusPostOutcome =
  | { readonly ok: true; readonly status: number }
  | { readonly ok: false; readonly error: string; readonly detail?: string };

/** Sends one signed status callback (spec: Events, "Delivery of status callbacks"); never throws. */
export async function postStatusCallback(post: StatusPost, options: StatusPostOptions): Promise<StatusPostOutcome> {
  const body = Buffer.from(post.body, 'utf8');
  const timestamp = String(Math.floor(options.now / 1000));
  // Requested and signed as one string (kit/request-url.ts), whatever form an older row stored.
  const url = requestUrl(post.url);
  try {
    // The reply body is ignored (spec: "200; body ignored"): read and dropped, which keeps the connection alive.
    const res = await guardedRequest(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Simu-Webhooks/0.1',
          'x-voice-signature': signWebhook(post.secret, url, timestamp, body),
          'x-voice-timestamp': timestamp,
          'x-voice-event': post.event,
        },
        body,
        timeoutMs: options.timeoutMs,
        maxBytes: IGNORED_BODY_BYTES,
        dropBody: true,
      },
      options.policy,
    );
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status };
    return { ok: false, error: `HTTP ${res.status}` };
  } catch (err) {
    if (err instanceof OutboundUrlError) return { ok: false, error: err.code, detail: err.detail };
    const e = err as Error;
    return { ok: false, error: e.name === 'TimeoutError' ? 'timeout' : 'URL_UNREACHABLE' };
  }
}
