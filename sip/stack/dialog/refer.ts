/**
 * REFER inside a dialog (RFC 3515) and the Replaces header (RFC 3891): reading a Refer-To that a peer sent, and the
 * implicit subscription a REFER creates, reported with NOTIFYs whose body is a message/sipfrag status line
 * (RFC 3420): `100 Trying` while the referred request is under way, then its final status, which ends the
 * subscription (RFC 3515 §2.4.5, §2.4.7).
 */
import { parseNameAddr, REASONS, type Uri } from '../message/index.js';
import type { Dialog } from './dialog.js';

/** Longest Refer-To or Replaces value read; anything longer is refused as malformed (hostile input is bounded). */
export const MAX_REFER_TO_LENGTH = 1024;

/** The dialog an INVITE (or a Refer-To) with Replaces names (RFC 3891 §6.1). */
export interface ReplacesTarget {
  callId: string;
  toTag: string;
  fromTag: string;
  earlyOnly: boolean;
}

export interface ReferTo {
  /** The Refer-To URI without its `?headers` part. */
  uri: Uri;
  /** Present when the Refer-To carried `?Replaces=` (attended transfer). */
  replaces?: ReplacesTarget;
}

/**
 * Reads a Refer-To header value (name-addr or addr-spec, RFC 3515 §2.1). Undefined when it is missing, too long,
 * not a URI, or carries a Replaces that cannot be read. Embedded headers other than Replaces are ignored: they
 * would only set headers of the request the switch places itself, and it places none a peer chooses.
 */
export function parseReferTo(value: string | undefined): ReferTo | undefined {
  if (!value || value.length > MAX_REFER_TO_LENGTH) return undefined;
  const addr = parseNameAddr(value.includes('<') ? value : `<${value.trim()}>`);
  if (!addr) return undefined;
  const uri = { ...addr.uri } as Uri & { headers?: string };
  const raw = uri.headers;
  delete uri.headers;
  if (raw === undefined) return { uri };
  let replaces: ReplacesTarget | undefined;
  for (const part of raw.split('&')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).toLowerCase() !== 'replaces') continue;
    let decoded: string;
    try {
      decoded = decodeURIComponent(part.slice(eq + 1));
    } catch {
      return undefined;
    }
    replaces = parseReplaces(decoded);
    if (!replaces) return undefined;
  }
  return replaces ? { uri, replaces } : { uri };
}

/** Reads a Replaces header value: `callid;to-tag=a;from-tag=b[;early-only]` (RFC 3891 §6.1). */
export function parseReplaces(value: string | undefined): ReplacesTarget | undefined {
  if (!value || value.length > MAX_REFER_TO_LENGTH) return undefined;
  const [callId, ...params] = value.split(';').map((s) => s.trim());
  if (!callId || !/^[\x21-\x7e]+$/.test(callId)) return undefined;
  let toTag: string | undefined;
  let fromTag: string | undefined;
  let earlyOnly = false;
  for (const p of params) {
    const [name, v] = p.split('=').map((s) => s.trim());
    const lower = (name ?? '').toLowerCase();
    if (lower === 'to-tag' && v) toTag = v;
    else if (lower === 'from-tag' && v) fromTag = v;
    else if (lower === 'early-only') earlyOnly = true;
  }
  if (!toTag || !fromTag) return undefined;
  return { callId, toTag, fromTag, earlyOnly };
}

/** Whether `dialog` is the one a Replaces names; the tags are matched either way round (RFC 3891 §3 is read both ways by phones). */
export function dialogMatches(dialog: Pick<Dialog, 'callId' | 'localTag' | 'remoteTag'>, r: ReplacesTarget): boolean {
  if (dialog.callId !== r.callId) return false;
  return (
    (dialog.localTag === r.toTag && dialog.remoteTag === r.fromTag) ||
    (dialog.localTag === r.fromTag && dialog.remoteTag === r.toTag)
  );
}

/** A status line as a message/sipfrag body (RFC 3420), e.g. `SIP/2.0 100 Trying`. */
export function sipfrag(status: number, reason: string): string {
  return `SIP/2.0 ${status} ${reason}\r\n`;
}

/**
 * The implicit subscription of one accepted REFER (RFC 3515 §2.4.4): `progress` sends a NOTIFY that keeps it
 * active, `finish` the last one (`Subscription-State: terminated;reason=noresource`). NOTIFYs go out one at a time
 * in order; a NOTIFY the peer does not take (a 481, a timeout) is logged by nobody and ends nothing: the transfer
 * goes on whatever the transferor hears. `finish` twice sends one NOTIFY.
 */
export class ReferSubscription {
  readonly #dialog: Dialog;
  readonly #event: string;
  #queue: Promise<unknown> = Promise.resolve();
  #done = false;
  /** Final statuses sent, for tests and logs. */
  readonly sent: number[] = [];

  /** `referSeq`: the REFER's CSeq number, given as the Event's id (RFC 3515 §2.4.6) when it is not the first. */
  constructor(dialog: Dialog, referSeq?: number) {
    this.#dialog = dialog;
    this.#event = referSeq === undefined ? 'refer' : `refer;id=${referSeq}`;
  }

  get finished(): boolean {
    return this.#done;
  }

  progress(status: number, reason?: string): Promise<void> {
    if (this.#done) return Promise.resolve();
    return this.#notify(status, reason, 'active;expires=60');
  }

  finish(status: number, reason?: string): Promise<void> {
    if (this.#done) return Promise.resolve();
    this.#done = true;
    return this.#notify(status, reason, 'terminated;reason=noresource');
  }

  #notify(status: number, reason: string | undefined, state: string): Promise<void> {
    this.sent.push(status);
    const send = this.#queue.then(() =>
      this.#dialog.state === 'terminated'
        ? undefined
        : this.#dialog.request('NOTIFY', {
            headers: { Event: this.#event, 'Subscription-State': state },
            body: sipfrag(status, reason ?? REASONS[status] ?? 'Unknown'),
            contentType: 'message/sipfrag;version=2.0',
          }),
    );
    this.#queue = send.catch(() => undefined);
    return this.#queue.then(() => undefined);
  }
}
