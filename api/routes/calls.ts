import { AdmissionRefusedError } from '../../billing/index.js';
import { DEFAULT_COUNTRY } from '../../config/index.js';
import { ReasonCodes } from '../../events/index.js';
import { NumberFormatError, normalise } from '../../numbers/index.js';
import type { Context } from 'koa';
import type { z } from 'zod';
import { originateCall, OriginateRefusedError, type MachineDetectionRequest } from '../../calls/index.js';
import { literalUrlVerdict, UrlPolicy } from '../../kit/index.js';
import {
  LIVE_CALL_STATUSES,
  countCallEvents,
  findCall,
  findCallBySid,
  listCallEvents,
  type CallRow,
} from '../../store/index.js';
import { authOf } from '../auth.js';
import { CallListCache } from '../call-list-cache.js';
import { ApiError, notFound, ValidationError } from '../errors.js';
import { withIdempotency } from '../idempotency.js';
import { callEventOut, callOut } from '../present.js';
import type { RouteDeps, RouteTable } from '../route-table.js';
import * as S from '../schemas.js';
import { parseBody, parseQuery } from '../validation.js';

const toIso = (s: string | undefined): string | undefined => (s ? new Date(s).toISOString() : undefined);

function e164Field(value: string, field: string, country: string): string {
  try {
    return normalise(value, country);
  } catch (e) {
    if (e instanceof NumberFormatError)
      throw new ValidationError(`The field "${field}" is not a number that reads as E.164: ${e.message} (${e.code})`);
    throw e;
  }
}

/** Originate's answering machine detection fields as the engine takes them; a refused callback host is a 400. */
function machineDetectionOf(
  body: z.infer<typeof S.OriginateBody>,
  webhooks: { allowPrivate: boolean; allowNetworks?: string[] },
): MachineDetectionRequest | undefined {
  if (!body.machine_detection) return undefined;
  const callback = body.async_amd_status_callback;
  if (callback !== undefined) {
    const policy = new UrlPolicy({ allowPrivate: webhooks.allowPrivate, allow: webhooks.allowNetworks ?? [] });
    const verdict = literalUrlVerdict(callback, policy);
    if (verdict && !verdict.allowed)
      throw new ValidationError(
        `The field "async_amd_status_callback" points at a ${verdict.class} address, where the platform sends nothing.`,
      );
  }
  const p = body.machine_detection_params ?? {};
  const params = Object.fromEntries(
    Object.entries({
      timeoutMs: p.timeout_ms,
      initialSilenceMs: p.initial_silence_ms,
      greetingMs: p.greeting_ms,
      afterGreetingSilenceMs: p.after_greeting_silence_ms,
      endSilenceMs: p.end_silence_ms,
      minWordMs: p.min_word_ms,
      betweenWordsSilenceMs: p.between_words_silence_ms,
      maxWords: p.max_words,
      maxWordMs: p.max_word_ms,
      silenceThreshold: p.silence_threshold,
    }).filter(([, v]) => v !== undefined),
  );
  return {
    mode: body.machine_detection,
    params,
    async: body.async_amd,
    ...(callback === undefined ? {} : { statusCallbackUrl: callback }),
  };
}

export function callRoutes(t: RouteTable, d: RouteDeps): void {
  const cache = new CallListCache(d.readDb, { pageTtlMs: d.config.api.listCacheMs });
  const pageJson = new WeakMap<CallRow[], string>();

  t.add(
    {
      method: 'get',
      path: '/api/calls',
      summary: 'List CDRs of the account, newest first',
      query: S.CallListQuery,
      ok: { status: 200, schema: S.CallListOut },
      errors: [400, 401],
    },
    async (ctx) => {
      const q = parseQuery(ctx, S.CallListQuery);
      const filter = {
        accountId: authOf(ctx).account.id,
        direction: q.direction,
        status: q.status,
        search: q.search || undefined,
        fromIso: toIso(q.from_dt),
        toIso: toIso(q.to_dt),
      };
      const [rows, total] = await Promise.all([cache.page(filter, q.limit, q.offset), cache.total(filter)]);
      // A page served again from the cache is the same array: its JSON is made once (the costliest part of a
      // cached answer), and the envelope is put around it.
      let calls = pageJson.get(rows);
      if (calls === undefined) pageJson.set(rows, (calls = JSON.stringify(rows.map(callOut))));
      ctx.type = 'application/json';
      ctx.body = `{"calls":${calls},"total":${total},"limit":${q.limit},"offset":${q.offset}}`;
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/calls/originate',
      summary: 'Place an outbound call (201 with the call as `initiated`)',
      body: S.OriginateBody,
      idempotent: true,
      ok: { status: 201, schema: S.CallOut },
      errors: [400, 401, 402, 403, 409, 422, 429, 503],
    },
    async (ctx) => {
      const parsed = await parseBody(ctx, S.OriginateBody);
      const account = authOf(ctx).account;
      // Numbers are stored, rated, matched and sent in E.164: `0712 345 678` is read with the
      // account's country; a string that is no number is a 400 naming the field and why.
      const country = account.country ?? d.config.numbers?.defaultCountry ?? DEFAULT_COUNTRY;
      const body = {
        ...parsed,
        to: e164Field(parsed.to, 'to', country),
        from: e164Field(parsed.from, 'from', country),
      };
      const machineDetection = machineDetectionOf(body, d.config.webhooks);
      // Overload control first: a refusal costs nothing of the store and is not an idempotent result (a retry
      // after Retry-After places the call).
      const load = d.overload?.admitNewCall();
      if (load && !load.ok)
        throw new AdmissionRefusedError(
          ReasonCodes.platformPaused,
          `The platform is carrying all the calls it can (${load.reason}); retry in ${load.retryAfterSeconds} s.`,
          load.retryAfterSeconds,
        );
      await withIdempotency(ctx, d.db, account.id, 'calls.originate', body, async () => {
        const request = {
          accountId: account.id,
          from: body.from,
          to: body.to,
          url: body.url,
          customPayload: body.customPayload,
          options: { timeoutSeconds: body.timeout, ...(machineDetection ? { machineDetection } : {}) },
        };
        try {
          const call = await originateCall({ db: d.db, admission: d.admission, engine: d.calls, log: d.log }, request);
          return { status: 201, body: callOut(call) };
        } catch (e) {
          if (e instanceof OriginateRefusedError) throw new ApiError(e.status, e.code, e.message);
          throw e;
        }
      }).finally(() => {
        // Its answer is this call's set-up completed: overload control measures what the box carries by it.
        if (load) d.overload?.noteCompleted?.();
      });
    },
  );

  /** Hangup, all three forms (spec: idempotent; an ended call is returned unchanged). */
  const hangup = async (ctx: Context, sid: string): Promise<void> => {
    const account = authOf(ctx).account;
    const call = await findCallBySid(d.db, account.id, sid);
    if (!call) throw notFound('Call', 'CALL_NOT_FOUND');
    ctx.body = callOut(await endCall(d, call));
  };
  const hangupSpec = {
    summary: 'End a live call (idempotent)',
    ok: { status: 200, schema: S.CallOut },
    errors: [400, 401, 404, 503],
  };
  t.add({ method: 'post', path: '/api/calls/hangup', body: S.SidBody, ...hangupSpec }, async (ctx) =>
    hangup(ctx, (await parseBody(ctx, S.SidBody)).sid),
  );
  t.add({ method: 'get', path: '/api/calls/hangup', query: S.SidQuery, ...hangupSpec }, async (ctx) =>
    hangup(ctx, parseQuery(ctx, S.SidQuery).sid),
  );
  t.add({ method: 'get', path: '/api/calls/hangup/:sid', ...hangupSpec }, async (ctx) =>
    hangup(ctx, String(ctx.params.sid)),
  );

  t.add(
    {
      method: 'get',
      path: '/api/calls/:uuid',
      summary: 'One call by uuid',
      ok: { status: 200, schema: S.CallOut },
      errors: [401, 404],
    },
    async (ctx) => {
      const call = await findCall(d.readDb, authOf(ctx).account.id, String(ctx.params.uuid));
      if (!call) throw notFound('Call', 'CALL_NOT_FOUND');
      ctx.body = callOut(call);
    },
  );

  t.add(
    {
      method: 'get',
      path: '/api/calls/:uuid/events',
      summary: "Beyond the spec: one call's events, oldest first (the call list's paging)",
      query: S.CallEventListQuery,
      ok: { status: 200, schema: S.CallEventListOut },
      errors: [400, 401, 404],
    },
    async (ctx) => {
      const q = parseQuery(ctx, S.CallEventListQuery);
      const accountId = authOf(ctx).account.id;
      const call = await findCall(d.readDb, accountId, String(ctx.params.uuid));
      if (!call) throw notFound('Call', 'CALL_NOT_FOUND');
      const [rows, total] = await Promise.all([
        listCallEvents(d.readDb, accountId, call.id, q),
        countCallEvents(d.readDb, accountId, call.id),
      ]);
      ctx.body = { events: rows.map(callEventOut), total, limit: q.limit, offset: q.offset };
    },
  );
}

/**
 * Ends a call for a hangup request: an ended call is returned unchanged; a live one is the engine's to end. A record
 * that still shows live although the switch no longer holds it (spec, States: "Call record shown live but the switch
 * has already ended it") is closed by the engine through the same reconcile path as the periodic sweep: END.0504,
 * settled once, one terminal event and status callback (docs/api.md, Hangup).
 */
async function endCall(d: RouteDeps, call: CallRow): Promise<CallRow> {
  if (!LIVE_CALL_STATUSES.includes(call.status)) return call;
  return d.calls.hangup(call);
}
