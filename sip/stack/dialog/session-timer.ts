/**
 * RFC 4028 session timers: reading Session-Expires and Min-SE, the UAS's choice of interval and refresher, and the
 * running timer of a confirmed dialog. The refresher re-INVITEs (with the dialog's current SDP) every half interval;
 * the other side, hearing no refresh, ends the session the smaller of 32 s and a third of the interval before it
 * would expire (§10) by emitting 'session-expired' on the dialog (the application sends BYE and records why).
 */
import type { SipRequest, SipResponse } from '../message/index.js';
import type { Clock, TimerHandle } from '../clock.js';

/** RFC 4028 §4: the smallest Min-SE allowed (the default of a UA that names none). */
export const RFC_MIN_SE = 90;
/** Largest interval read (a day); anything larger is taken as this. */
const MAX_SE = 86_400;

export interface SessionExpires {
  seconds: number;
  refresher?: 'uac' | 'uas';
}

/** `Session-Expires` (or its compact form `x`) of a message: `delta-seconds *(;param)`; undefined when absent or unreadable. */
export function readSessionExpires(msg: SipRequest | SipResponse): SessionExpires | undefined {
  const raw = msg.headers.get('session-expires');
  if (raw === undefined || raw.length > 200) return undefined;
  const [delta, ...params] = raw.split(';').map((p) => p.trim());
  if (!/^\d{1,10}$/.test(delta ?? '')) return undefined;
  const out: SessionExpires = { seconds: Math.min(Number(delta), MAX_SE) };
  for (const p of params) {
    const [k, v] = p.split('=').map((s) => s.trim().toLowerCase());
    if (k === 'refresher' && (v === 'uac' || v === 'uas')) out.refresher = v;
  }
  return out;
}

/** `Min-SE` of a message (seconds), undefined when absent or unreadable. */
export function readMinSe(msg: SipRequest | SipResponse): number | undefined {
  const raw = msg.headers.get('min-se')?.split(';')[0]?.trim();
  return raw && /^\d{1,10}$/.test(raw) ? Math.min(Number(raw), MAX_SE) : undefined;
}

/** Whether a message lists `tag` in Supported (or its compact form `k`). */
export function supports(msg: SipRequest | SipResponse, tag: string): boolean {
  return msg.headers
    .getAll('supported')
    .flatMap((v) => v.split(','))
    .some((t) => t.trim().toLowerCase() === tag);
}

/** What a UAS agreed to for an INVITE asking for a session timer. */
export interface UasSessionTimer {
  seconds: number;
  /** Who refreshes, from the UAS's side: 'remote' is the caller (refresher=uac). */
  refresher: 'local' | 'remote';
  /** Headers of the 2xx (and of the 2xx to each refresh). */
  headers: Record<string, string>;
}

/**
 * RFC 4028 §9 for an INVITE with Session-Expires (the 422 for one below Min-SE is the request validator's): the
 * interval asked for (never below `minSe`), refresher as asked, else the caller when it supports timers (it is
 * then told so with Require: timer), else ourselves. Undefined when the INVITE asks for no session timer.
 */
export function uasSessionTimer(req: SipRequest, minSe: number): UasSessionTimer | undefined {
  const se = readSessionExpires(req);
  if (!se) return undefined;
  const seconds = Math.max(se.seconds, minSe);
  const uacTimer = supports(req, 'timer');
  const refresher = se.refresher ?? (uacTimer ? 'uac' : 'uas');
  return {
    seconds,
    refresher: refresher === 'uac' ? 'remote' : 'local',
    headers: {
      'Session-Expires': `${seconds};refresher=${refresher}`,
      ...(uacTimer ? { Require: 'timer' } : {}),
    },
  };
}

/** The part of a dialog the timer drives. */
export interface TimedDialog {
  readonly state: 'early' | 'confirmed' | 'terminated';
  localSdp?: string;
  request(method: string, opts?: { headers?: Record<string, string>; body?: string }): Promise<SipResponse>;
  /** Called once when the session expires (no refresh heard, or our refresh failed). */
  sessionExpired(why: 'no-refresh' | 'refresh-failed'): void;
}

/**
 * The running timer of one dialog. `local` refresher: a re-INVITE every half interval; a refresh answered with a
 * failure that ends the session (408, 481, or no answer) expires it. `remote` refresher: expires it when no refresh
 * arrived within the interval minus min(32 s, interval / 3).
 */
export class SessionTimer {
  #seconds: number;
  #refresher: 'local' | 'remote';
  #timer?: TimerHandle;
  #stopped = false;
  /** Refreshes sent and heard (figures for tests). */
  readonly stats = { sent: 0, heard: 0 };

  constructor(
    private readonly dialog: TimedDialog,
    private readonly clock: Clock,
    agreed: { seconds: number; refresher: 'local' | 'remote' },
    private readonly headers: (seconds: number, refresher: 'local' | 'remote') => Record<string, string>,
  ) {
    this.#seconds = agreed.seconds;
    this.#refresher = agreed.refresher;
    this.#arm();
  }

  get seconds(): number {
    return this.#seconds;
  }

  get refresher(): 'local' | 'remote' {
    return this.#refresher;
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) this.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /**
   * A re-INVITE or UPDATE arrived from the peer (a refresh, §10): restarts the interval, with the peer's new
   * Session-Expires if it named one (never below `minSe`). Returns the headers for its 2xx.
   */
  refreshedBy(req: SipRequest, minSe: number, ourSide: 'uac' | 'uas'): Record<string, string> {
    this.stats.heard += 1;
    const se = readSessionExpires(req);
    if (se) {
      this.#seconds = Math.max(se.seconds, minSe);
      // The refresher named in the refresh, as a role of the request's sender (uac = the peer sending it).
      const peerRole = ourSide === 'uas' ? 'uac' : 'uas';
      if (se.refresher) this.#refresher = se.refresher === peerRole ? 'remote' : 'local';
      else this.#refresher = 'remote';
    }
    this.#arm();
    return this.headers(this.#seconds, this.#refresher);
  }

  #arm(): void {
    if (this.#stopped) return;
    if (this.#timer) this.clock.clearTimeout(this.#timer);
    const s = this.#seconds;
    if (this.#refresher === 'local') {
      this.#timer = this.clock.setTimeout(() => void this.#refresh(), (s / 2) * 1000);
    } else {
      const before = Math.min(32, s / 3);
      this.#timer = this.clock.setTimeout(() => this.#expire('no-refresh'), (s - before) * 1000);
    }
  }

  async #refresh(): Promise<void> {
    if (this.#stopped || this.dialog.state === 'terminated') return;
    this.stats.sent += 1;
    try {
      const res = await this.dialog.request('INVITE', {
        headers: { ...this.headers(this.#seconds, 'local'), Supported: 'timer' },
        ...(this.dialog.localSdp ? { body: this.dialog.localSdp } : {}),
      });
      if (this.#stopped) return;
      // §10: 408 and 481 mean the session is gone; other failures (491 glare, 5xx) leave it as it was.
      if (res.status === 408 || res.status === 481) return this.#expire('refresh-failed');
      if (res.status === 422) {
        const min = readMinSe(res);
        if (min && min > this.#seconds) this.#seconds = min;
      }
      this.#arm();
    } catch {
      if (!this.#stopped) this.#expire('refresh-failed');
    }
  }

  #expire(why: 'no-refresh' | 'refresh-failed'): void {
    if (this.#stopped) return;
    this.stop();
    if (this.dialog.state !== 'terminated') this.dialog.sessionExpired(why);
  }
}
