import { createHash } from 'node:crypto';
import type { Logger } from '../../config/index.js';
import { EventCodes } from '../../events/index.js';
import type { Clock, ReplyHeaders } from '../../kit/index.js';
import { findLastGoodDocument, markCallServedFrom, nowIso, saveLastGoodDocument, type Db } from '../../store/index.js';
import { parseVerbDocument, WebhookFetchError, type VerbDocument } from '../../verbs/index.js';

/**
 * The last known good document: when a number's call-control webhook fails (timeout, network,
 * a status other than 200, an invalid document) and its account opted in (`accounts.last_good_document`), the call
 * runs the last valid document that webhook returned for that number, if it is younger than
 * `prepaid.lastGoodMaxAgeSeconds`; else the account's fallback runs as before. WH.0400 says which was used
 * (`fallback: "last_good"` with `lastGoodAgeSeconds`), and the call's CDR (`served_from: last_good`).
 *
 * Kept only is a document that carried no per-call state. Precisely, a reply is kept when all of these hold:
 * 1. it answered the number's call-control request: the first request of an inbound call to the number, not an
 *    action, Redirect or status request (those carry the call's own results: Digits, DialCallStatus ...);
 * 2. its reply did not say `Cache-Control: no-store` or `private` (how an application marks a document as for
 *    this caller only);
 * 3. it sets no customPayload (state attached to the call);
 * 4. its text names nothing of the call: not its sid, not its uuid, not the caller's number (with or without the
 *    `+`), so no action or Redirect URL back to a per-call resource and no greeting made for this caller.
 * A document that passes can serve any later caller of the number as it served this one.
 */

export interface LastGoodCall {
  id: string;
  sid: string;
  accountId: string;
  /** The number called (the DID), the key the document is kept under. */
  number: string;
  /** The caller's number. */
  from: string;
}

/** Rules 2 to 4 above (rule 1 is the caller's: it asks only for the number's call-control reply). */
export function keepableDocument(
  xml: string,
  document: VerbDocument,
  headers: ReplyHeaders,
  call: LastGoodCall,
): boolean {
  if (/(^|[\s,])(no-store|private)\b/i.test(headers.get('cache-control') ?? '')) return false;
  if (document.customPayload !== undefined) return false;
  const own = [call.sid, call.id, call.from, call.from.replace(/^\+/, '')].filter((s) => s.length >= 4);
  return !own.some((s) => xml.includes(s));
}

/** Reasons a fetch failed that the last good document answers (an aborted request is the call ending). */
const SERVED_ON = new Set(['timeout', 'network', 'http_status', 'invalid_document']);

/** An unchanged document is written again at most this often (its age is what bounds its use). */
const REWRITE_MS = 60_000;

export class LastGoodDocuments {
  readonly #recent = new Map<string, { hash: string; at: number }>();

  constructor(
    private readonly d: {
      db: Db;
      maxAgeSeconds: number;
      clock: Pick<Clock, 'now'>;
      log: Logger;
    },
  ) {}

  /** Keeps the reply as the number's last good document when the rules allow (rules 2-4); never throws. */
  remember(call: LastGoodCall, url: string, xml: string, document: VerbDocument, headers: ReplyHeaders): void {
    if (!keepableDocument(xml, document, headers, call)) return;
    const key = `${call.accountId}\n${call.number}`;
    const hash = createHash('sha256').update(url).update('\n').update(xml).digest('hex');
    const now = this.d.clock.now();
    const last = this.#recent.get(key);
    if (last && last.hash === hash && now - last.at < REWRITE_MS) return;
    this.#recent.set(key, { hash, at: now });
    if (this.#recent.size > 10_000) this.#recent.delete(this.#recent.keys().next().value as string);
    saveLastGoodDocument(this.d.db, {
      account_id: call.accountId,
      number: call.number,
      url,
      document: xml,
      fetched_at: nowIso(new Date(now)),
    }).catch((e: unknown) => this.d.log.warn({ err: e, number: call.number }, 'last good document not kept'));
  }

  /**
   * The number's call-control request through `fetchWith` (which reports the reply's text and headers): a valid
   * reply is remembered (rules 2-4), a failed one is answered with the last good document when there is one.
   */
  async fetch(
    call: LastGoodCall,
    url: string,
    fetchWith: (onSource: (xml: string, headers: ReplyHeaders) => void) => Promise<VerbDocument>,
    emit: (code: typeof EventCodes.webhookFailed, data: Record<string, unknown>) => Promise<unknown>,
  ): Promise<VerbDocument> {
    let source: { xml: string; headers: ReplyHeaders } | undefined;
    try {
      const document = await fetchWith((xml, headers) => (source = { xml, headers }));
      if (source) this.remember(call, url, source.xml, document, source.headers);
      return document;
    } catch (e) {
      const kept = await this.recall(call, e, emit);
      if (kept) return kept;
      throw e;
    }
  }

  /**
   * The number's last good document for a failed fetch, or undefined (too old, none, or a failure it does not
   * answer). When it answers, WH.0400 is emitted through `emit` and the call is marked as served from it.
   */
  async recall(
    call: LastGoodCall,
    error: unknown,
    emit: (code: typeof EventCodes.webhookFailed, data: Record<string, unknown>) => Promise<unknown>,
  ): Promise<VerbDocument | undefined> {
    if (!(error instanceof WebhookFetchError) || !SERVED_ON.has(error.reason)) return undefined;
    const row = await findLastGoodDocument(this.d.db, call.accountId, call.number);
    if (!row) return undefined;
    const ageSeconds = Math.floor((this.d.clock.now() - Date.parse(row.fetched_at)) / 1000);
    if (ageSeconds > this.d.maxAgeSeconds) return undefined;
    let document: VerbDocument;
    try {
      document = parseVerbDocument(row.document);
    } catch {
      return undefined; // (valid when kept; a newer parser may refuse it: then the fallback runs)
    }
    await emit(EventCodes.webhookFailed, {
      url: error.url,
      reason: error.reason,
      ...(error.status === undefined ? {} : { status: error.status }),
      fallback: 'last_good',
      lastGoodAgeSeconds: ageSeconds,
      lastGoodUrl: row.url,
    });
    await markCallServedFrom(this.d.db, call.id, 'last_good');
    return document;
  }
}
