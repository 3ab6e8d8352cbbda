import type { Logger } from '../config/index.js';
import { mailboxCounts, type Db, type MailboxCounts } from '../store/index.js';
import {
  formatUri,
  type MessageSource,
  type Responder,
  type SipRequest,
  type Target,
  type UserAgent,
} from './stack/index.js';

/** The end-user a phone's request was authenticated as (EndUserIdentity's fields this module reads). */
export interface Subscriber {
  accountId: string;
  endUserId: string;
  extension: string;
}

/** Authenticates a phone's request; null when it has answered it (challenge or refusal). */
export type SubscriberAuthenticator = (req: SipRequest, srv: Responder) => Promise<Subscriber | null>;

/** Bounds on what phones may hold (every outside input is bounded). */
export const MWI_LIMITS = {
  minExpires: 60,
  maxExpires: 3600,
  defaultExpires: 3600,
  perEndUser: 8,
  total: 10_000,
};

/**
 * Why a subscription ended, as its last NOTIFY says (RFC 6665 §4.1.3): `timeout`, it ran out unrefreshed (or was a
 * fetch, Expires 0 from the start); `deactivated`, the subscriber ended it (Expires 0 in its dialog).
 */
type EndReason = 'timeout' | 'deactivated';

interface Subscription {
  key: string;
  accountId: string;
  endUserId: string;
  extension: string;
  domain: string;
  callId: string;
  /** Our tag (the To tag of our 200) and the phone's (its From tag). */
  localTag: string;
  remoteTag: string;
  localParty: string;
  remoteParty: string;
  remoteTarget: string;
  /** Where its SUBSCRIBE came from: NOTIFYs go back there (the phone may be behind NAT). */
  target: Target;
  cseq: number;
  /** The CSeq of the phone's last SUBSCRIBE in this dialog: a refresh must come with a higher one. */
  remoteCseq: number;
  expiresAt: number;
  timer: NodeJS.Timeout;
  /** The NOTIFY under way (settled once answered or given up): the next one waits for it. */
  sending: Promise<void>;
}

/**
 * Message-waiting indication (RFC 3842 over RFC 6665): a phone SUBSCRIBEs to `Event: message-summary` for its own
 * mailbox, is answered 200 and sent a NOTIFY at once with `Messages-Waiting: yes/no` and `Voice-Message: new/old`,
 * then a NOTIFY on every change (a message left, heard or deleted). The subscription is authenticated like the
 * phone's INVITEs (phone token, digest or Bearer) and always concerns the authenticated end-user's mailbox,
 * whatever the Request-URI names. A refresh in the subscription's dialog (RFC 6665 §4.1.2.1) is authenticated the
 * same way, extends it and gets a NOTIFY too; Expires 0 ends it. A refresh of a subscription this switch does not
 * hold (ended, expired, or the switch restarted) gets 481, and the phone subscribes afresh (§4.1.2.4).
 */
export class MessageWaiting {
  readonly #subs = new Map<string, Subscription>();

  constructor(
    private readonly deps: {
      ua: UserAgent;
      db: Db;
      log: Logger;
      authenticate: () => SubscriberAuthenticator | undefined;
    },
  ) {}

  get size(): number {
    return this.#subs.size;
  }

  /** The UA's SUBSCRIBE handler. */
  async subscribe(req: SipRequest, srv: Responder): Promise<void> {
    const event = (req.headers.get('event') ?? '').split(';')[0]!.trim().toLowerCase();
    // RFC 6665 §8.2.1 (RFC 3265 §3.1.4.1): an event package we do not serve gets 489 with Allow-Events.
    if (event !== 'message-summary')
      return void srv.send(489, 'Bad Event', { headers: { 'Allow-Events': 'message-summary' } });
    const key = `${req.callId}|${req.fromTag}`;
    const current = req.toTag === undefined ? undefined : this.#subs.get(key);
    if (req.toTag !== undefined) {
      if (!current || current.localTag !== req.toTag) return void srv.send(481, 'Subscription Does Not Exist');
      if (req.cseq.seq <= current.remoteCseq) return void srv.send(500, 'CSeq Out of Order'); // RFC 3261 §12.2.2
      current.remoteCseq = req.cseq.seq;
    }
    const authenticate = this.deps.authenticate();
    if (!authenticate) return void srv.send(403, 'Forbidden');
    const who = await authenticate(req, srv);
    if (!who) return;
    const expires = boundedExpires(req.headers.get('expires'));
    if (current) {
      if (who.accountId !== current.accountId || who.endUserId !== current.endUserId)
        return void srv.send(403, 'Forbidden');
      return this.#refresh(current, expires, req, srv); // its Contact may be left out: the dialog's stands
    }
    const contact = req.contact?.uri;
    if (!contact || !req.source || !req.fromTag) return void srv.send(400, 'Bad Request');
    this.#drop(key);
    if (expires > 0 && !this.#room(who.endUserId)) return void srv.send(503, 'Service Unavailable');
    srv.send(200, 'OK', { headers: { Expires: String(expires) } });
    const src = req.source;
    const sub: Subscription = {
      key,
      accountId: who.accountId,
      endUserId: who.endUserId,
      extension: who.extension,
      domain: (req.uri as { host?: string }).host ?? '',
      callId: req.callId,
      localTag: srv.toTag,
      remoteTag: req.fromTag,
      localParty: stripTag(req.headers.get('to') ?? ''),
      remoteParty: req.headers.get('from') ?? '',
      remoteTarget: formatUri(contact),
      target: replyTarget(src),
      cseq: 0,
      remoteCseq: req.cseq.seq,
      expiresAt: Date.now() + expires * 1000,
      // RFC 6665 §4.4.1: a subscription that ran out ends with a NOTIFY saying so.
      timer: setTimeout(() => void this.#expire(key), expires * 1000),
      sending: Promise.resolve(),
    };
    sub.timer.unref();
    // RFC 6665 §4.2.1.2: the first NOTIFY follows the 200 at once. A new SUBSCRIBE with Expires 0 is a fetch
    // (§4.4.3): one NOTIFY of the state, saying the subscription's zero seconds have run out.
    if (expires > 0) this.#subs.set(key, sub);
    await this.#notify(sub, expires === 0 ? 'timeout' : undefined);
  }

  /**
   * A refresh in the subscription's dialog: the same subscription (its NOTIFYs keep their CSeq order) with a new
   * expiry, and a NOTIFY (RFC 6665 §4.2.1.2); Expires 0 ends it with a NOTIFY `terminated;reason=deactivated`
   * (§4.2.1.4, §4.1.3: `timeout` says the subscriber let it run out, which it did not). A new Contact or source
   * (the phone moved, or its NAT binding did) is where NOTIFYs go from now on.
   */
  async #refresh(s: Subscription, expires: number, req: SipRequest, srv: Responder): Promise<void> {
    if (this.#subs.get(s.key) !== s) return void srv.send(481, 'Subscription Does Not Exist'); // ended meanwhile
    if (expires === 0) {
      this.#drop(s.key);
      srv.send(200, 'OK', { headers: { Expires: '0' } });
      return this.#notify(s, 'deactivated');
    }
    srv.send(200, 'OK', { headers: { Expires: String(expires) } });
    clearTimeout(s.timer);
    s.expiresAt = Date.now() + expires * 1000;
    s.timer = setTimeout(() => void this.#expire(s.key), expires * 1000);
    s.timer.unref();
    const contact = req.contact?.uri;
    if (contact) s.remoteTarget = formatUri(contact);
    const src = req.source;
    if (src) s.target = replyTarget(src);
    await this.#notify(s);
  }

  /** The mailbox of `endUserId` changed: each of its subscriptions is sent the new counts. */
  async changed(accountId: string, endUserId: string): Promise<void> {
    const subs = [...this.#subs.values()].filter((s) => s.endUserId === endUserId && s.accountId === accountId);
    await Promise.all(subs.map((s) => this.#notify(s)));
  }

  close(): void {
    for (const key of [...this.#subs.keys()]) this.#drop(key);
  }

  #room(endUserId: string): boolean {
    if (this.#subs.size >= MWI_LIMITS.total) return false;
    let mine = 0;
    for (const s of this.#subs.values()) if (s.endUserId === endUserId) mine++;
    return mine < MWI_LIMITS.perEndUser;
  }

  async #expire(key: string): Promise<void> {
    const s = this.#subs.get(key);
    if (!s) return;
    this.#drop(key);
    await this.#notify(s, 'timeout').catch(() => undefined);
  }

  #drop(key: string): void {
    const s = this.#subs.get(key);
    if (!s) return;
    clearTimeout(s.timer);
    this.#subs.delete(key);
  }

  /**
   * NOTIFYs of a subscription go one at a time, each once the one before is answered, and say what the mailbox
   * holds when they go: a phone never gets an older count after a newer one. (Sent at once, the first NOTIFY,
   * whose read of the store was under way, could leave after the one of a message deleted meanwhile.)
   * `ended`: the last NOTIFY, with why the subscription ended (RFC 6665 §4.1.3).
   */
  #notify(s: Subscription, ended?: EndReason): Promise<void> {
    const sent = s.sending.then(() => this.#send(s, ended));
    s.sending = sent.catch(() => undefined);
    return sent;
  }

  async #send(s: Subscription, ended: EndReason | undefined): Promise<void> {
    if (!ended && this.#subs.get(s.key) !== s) return; // ended while this one waited its turn
    const counts = await mailboxCounts(this.deps.db, s.accountId, s.endUserId);
    const left = Math.max(0, Math.round((s.expiresAt - Date.now()) / 1000));
    s.cseq += 1;
    try {
      const res = await this.deps.ua.request(s.remoteTarget, {
        method: 'NOTIFY',
        proxy: s.target,
        contentType: 'application/simple-message-summary',
        body: messageSummary(counts, `sip:${s.extension}@${s.domain}`),
        headers: {
          From: `${s.localParty};tag=${s.localTag}`,
          To: s.remoteParty,
          'Call-ID': s.callId,
          CSeq: `${s.cseq} NOTIFY`,
          Contact: this.deps.ua.contact(s.target.transport),
          Event: 'message-summary',
          'Subscription-State': ended ? `terminated;reason=${ended}` : `active;expires=${left}`,
        },
      });
      // RFC 6665 §4.2.2: a 481 (or any failure but a 408 retry) from the subscriber ends the subscription.
      if (res.status >= 300) this.#drop(s.key);
    } catch (e) {
      this.deps.log.info({ err: e, endUser: s.endUserId }, 'message-summary NOTIFY not delivered');
      this.#drop(s.key);
    }
  }
}

/** The RFC 3842 §5.2 body: `Messages-Waiting`, the account, and `Voice-Message: new/old`. */
export function messageSummary(c: MailboxCounts, account: string): string {
  return [
    `Messages-Waiting: ${c.newMessages > 0 ? 'yes' : 'no'}`,
    `Message-Account: ${account}`,
    `Voice-Message: ${c.newMessages}/${c.oldMessages}`,
    '',
  ].join('\r\n');
}

/** Where a request came from, as the target of the requests sent back (its connection, when it came on one). */
function replyTarget(src: MessageSource): Target {
  return { transport: src.transport, host: src.address, port: src.port, flowId: src.flowId };
}

function boundedExpires(header: string | undefined): number {
  if (header === undefined || !/^\s*\d{1,10}\s*$/.test(header)) return MWI_LIMITS.defaultExpires;
  const n = Number(header);
  if (n === 0) return 0;
  return Math.min(MWI_LIMITS.maxExpires, Math.max(MWI_LIMITS.minExpires, n));
}

function stripTag(party: string): string {
  return party.replace(/;\s*tag=[^;]*/i, '');
}
