import { EventCodes } from '../../events/index.js';
import { SipCanceledError, SipError, type SipResponse } from '../../sip/stack/index.js';
import type { OutboundPlan, TrunkRoute } from '../../sip/index.js';
import type { FlowDeps } from './flow-deps.js';
import { abortQuietly } from '../../kit/index.js';
import { dialLeg, type DialLegOptions, type DialLegOutcome } from './dial-leg.js';

/** What the caller of dialPstn records each attempt with (the call's or the Dial leg's events). */
export type AttemptSink = (code: typeof EventCodes.routeAttempt, data: Record<string, unknown>) => Promise<void>;

export interface DialPstnOptions extends Omit<DialLegOptions, 'target' | 'to'> {
  /** The E.164 number dialled (`+2547...`). */
  number: string;
  /** Plan the `emergency` route instead of the number's. */
  emergency?: boolean;
  /** Each attempt becomes a ROUTE.0100 on the call's events. */
  onAttempt?: AttemptSink;
  /** The plan already made for this number (else it is made here). */
  plan?: OutboundPlan;
}

export type DialPstnOutcome = DialLegOutcome & { route?: TrunkRoute; attempts: number };

/** No route or trunk can carry the number (none configured, all down, or all loss-making). */
export class NoRouteError extends Error {
  readonly code = 'NO_ROUTE';
  constructor(number: string) {
    super(`no trunk can carry ${number}`);
  }
}

/** An attempt the trunk left without any response for routing.attemptTimeoutSeconds. */
export class TrunkSilentError extends SipError {
  constructor(seconds: number) {
    // 500: a carrier failure, not the callee's no-answer (the stack's own timer B gives 408).
    super('TRUNK_SILENT', 500, `no response from the trunk in ${seconds} s`);
  }
}

/**
 * An outbound PSTN leg with least-cost routing and failover (docs/routing.md). The number's
 * trunks are tried in the routes table's order, all within the leg's own `timeoutSeconds`:
 * - a 408, a 5xx, no response at all within routing.attemptTimeoutSeconds, or a transport error tries the next;
 *   a 503 with Retry-After also holds that trunk down for that many seconds (every call skips it meanwhile);
 * - any other final answer (404, 480, 486, 603 ...) concerns the callee and ends the leg with its own reason;
 * - answered, canceled by the caller, or out of time ends it too.
 * Each attempt is a ROUTE.0100 event: `{ attempt, trunk, sipStatus, outcome, failover, why }`; the SIP status is
 * not named `status`, which a status callback's call snapshot (the call's own status) would overwrite.
 */
export async function dialPstn(d: FlowDeps, o: DialPstnOptions): Promise<DialPstnOutcome> {
  const plan = o.plan ?? (await d.sip.trunks.outboundPlan(o.number, { emergency: o.emergency }));
  const deadline = Date.now() + o.timeoutSeconds * 1000;
  const silentSeconds = d.config.routing?.attemptTimeoutSeconds ?? 4;
  let last: DialPstnOutcome | undefined;
  for (const [i, route] of plan.targets.entries()) {
    const left = deadline - Date.now();
    if (left <= 0 || o.signal?.aborted) break;
    const outcome = await attempt(d, o, route, left / 1000, silentSeconds);
    const status = outcome.ok ? 200 : statusOf(outcome.error);
    const failover = !outcome.ok && !outcome.noAnswer && !o.signal?.aborted && shouldFailOver(outcome.error);
    const retryAfter = !outcome.ok ? retryAfterOf(outcome.error) : undefined;
    if (retryAfter !== undefined) d.sip.trunkHealth?.holdDown(route.trunk, retryAfter);
    await o.onAttempt?.(EventCodes.routeAttempt, {
      attempt: i + 1,
      trunk: route.trunk.name,
      sipStatus: status,
      outcome: outcome.ok ? 'answered' : outcome.noAnswer ? 'no-answer' : describe(outcome.error),
      failover: failover && i + 1 < plan.targets.length,
      ...(retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter }),
      why: route.why,
    });
    last = { ...outcome, route, attempts: i + 1 };
    if (!failover) return last;
  }
  return last ?? { ok: false, error: new NoRouteError(o.number), noAnswer: false, attempts: 0 };
}

/** One trunk: ring it for at most `seconds`, giving up early if it sends nothing at all for `silentSeconds`. */
async function attempt(
  d: FlowDeps,
  o: DialPstnOptions,
  route: TrunkRoute,
  seconds: number,
  silentSeconds: number,
): Promise<DialLegOutcome> {
  const ring = new AbortController();
  const onAbort = () => ring.abort(o.signal?.reason); // a CancelReason travels on to the CANCEL (RFC 3326)
  o.signal?.addEventListener('abort', onAbort, { once: true });
  let heard = false;
  let silent: NodeJS.Timeout | undefined;
  const quiet = new Promise<DialLegOutcome>((resolve) => {
    silent = setTimeout(() => {
      if (heard) return;
      abortQuietly(ring);
      resolve({ ok: false, error: new TrunkSilentError(silentSeconds), noAnswer: false });
    }, silentSeconds * 1000);
  });
  const leg = dialLeg(d, {
    ...o,
    target: { uri: route.requestUri(o.number), proxy: route.outbound, auth: route.auth, transport: 'UDP' },
    to: `<sip:${o.number}@${route.trunk.host}>`,
    timeoutSeconds: seconds,
    signal: ring.signal,
    onTrying: () => (heard = true),
    onRinging: () => {
      heard = true;
      o.onRinging?.();
    },
  });
  try {
    const first = await Promise.race([leg, quiet]);
    if (first.ok || !(first.error instanceof TrunkSilentError)) return first;
    // We moved on: a late 2xx of the abandoned INVITE is hung up at once (the stack CANCELs it if it rings).
    void leg.then((late) => (late.ok ? late.dialog.bye().catch(() => undefined) : undefined));
    return first;
  } finally {
    clearTimeout(silent);
    o.signal?.removeEventListener('abort', onAbort);
  }
}

/** The SIP status the trunk answered with; undefined when it never answered (silence, timeout, transport). */
function statusOf(e: unknown): number | undefined {
  return responseOf(e)?.status;
}

function responseOf(e: unknown): SipResponse | undefined {
  return (e as { response?: SipResponse }).response;
}

/** 408, 5xx (a real response, or the stack's timeout / transport error), silence and local errors fail over. */
function shouldFailOver(e: unknown): boolean {
  if (e instanceof NoRouteError || e instanceof SipCanceledError) return false;
  if (!(e instanceof SipError)) return true;
  return e.status === 408 || (e.status >= 500 && e.status < 600);
}

/** Seconds of a 503's Retry-After (RFC 3261 §20.33), bounded; undefined otherwise. */
function retryAfterOf(e: unknown): number | undefined {
  const res = responseOf(e);
  if (!res || res.status !== 503) return undefined;
  const m = /^\s*(\d{1,6})/.exec(res.headers.get('retry-after') ?? '');
  return m ? Math.min(3600, Number(m[1])) : undefined;
}

function describe(e: unknown): string {
  if (e instanceof TrunkSilentError) return 'silent';
  if (e instanceof SipCanceledError) return 'canceled';
  const res = responseOf(e);
  if (res) return 'rejected';
  if (e instanceof SipError) return e.code === 'SIP_TIMEOUT' ? 'timeout' : 'transport-error';
  return 'error';
}
