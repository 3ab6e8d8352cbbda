import type { CallControlOutcome } from '../../calls/index.js';
import { LIVE_CALL_STATUSES, findCall, type CallRow } from '../../store/index.js';
import { VerbDocumentError, parseVerbDocument, type InterpreterStart } from '../../verbs/index.js';
import { authOf } from '../auth.js';
import { ApiError, notFound } from '../errors.js';
import { withIdempotency } from '../idempotency.js';
import { callOut } from '../present.js';
import type { RouteDeps, RouteTable } from '../route-table.js';
import * as S from '../schemas.js';
import { parseBody } from '../validation.js';
import type { Context } from 'koa';

/**
 * REST control of a live call (docs/api.md, "Live call control"): move it to new verbs now (update, as Twilio's
 * call update) and press keys into it (digits). Both take an Idempotency-Key: a retry replays the first answer and
 * never moves the call or presses the keys twice. Another account's call is 404; an ended one 409 CALL_ENDED.
 */
export function callControlRoutes(t: RouteTable, d: RouteDeps): void {
  t.add(
    {
      method: 'post',
      path: '/api/calls/:uuid/update',
      summary: 'Move a live call to new verbs now: fetch `url`, or run the inline `twiml` (the running verb stops)',
      body: S.CallUpdateBody,
      idempotent: true,
      ok: { status: 200, schema: S.CallOut },
      errors: [400, 401, 404, 409, 422, 503],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.CallUpdateBody);
      const uuid = String(ctx.params.uuid);
      const account = authOf(ctx).account;
      await withIdempotency(ctx, d.db, account.id, 'calls.update', { uuid, ...body }, async () => {
        const call = await liveCallOf(ctx, d, uuid);
        const start = startOf(body);
        refuse(await d.calls.redirect(call, start, 'url' in start ? 'url' : 'twiml'));
        return { status: 200, body: callOut(call) };
      });
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/calls/:uuid/digits',
      summary: 'Press keys in a live call: RFC 4733 events towards its leg (answers once they were sent)',
      body: S.CallDigitsBody,
      idempotent: true,
      ok: { status: 200, schema: S.CallOut },
      errors: [400, 401, 404, 409, 503],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.CallDigitsBody);
      const uuid = String(ctx.params.uuid);
      const account = authOf(ctx).account;
      await withIdempotency(ctx, d.db, account.id, 'calls.digits', { uuid, ...body }, async () => {
        const call = await liveCallOf(ctx, d, uuid);
        refuse(await d.calls.sendDigits(call, body.digits));
        return { status: 200, body: callOut(call) };
      });
    },
  );
}

/** The account's call by uuid, live: 404 when it is not the account's, 409 CALL_ENDED when it has ended. */
async function liveCallOf(ctx: Context, d: RouteDeps, uuid: string): Promise<CallRow> {
  const call = await findCall(d.db, authOf(ctx).account.id, uuid);
  if (!call) throw notFound('Call', 'CALL_NOT_FOUND');
  if (!LIVE_CALL_STATUSES.includes(call.status)) throw ended();
  return call;
}

/** Where the new verbs come from; the inline document is validated exactly as a fetched one (verbs/parse.ts). */
function startOf(body: { url?: string; method?: string; twiml?: string }): InterpreterStart {
  if (body.url !== undefined) {
    if (body.method !== undefined && body.method.toUpperCase() !== 'POST')
      throw new ApiError(
        422,
        'METHOD_UNSUPPORTED',
        'The field "method" must be POST: every request Simu sends is a signed JSON POST.',
      );
    return { url: body.url };
  }
  try {
    return { document: parseVerbDocument(body.twiml ?? '') };
  } catch (e) {
    if (!(e instanceof VerbDocumentError)) throw e;
    throw new ApiError(422, 'TWIML_INVALID', `The field "twiml" is not a valid verb document: ${e.message}`);
  }
}

function ended(): ApiError {
  return new ApiError(409, 'CALL_ENDED', 'The call has ended; only a live call can be controlled.');
}

/** An engine outcome other than `ok` as the API's stable refusal. */
function refuse(outcome: CallControlOutcome): void {
  switch (outcome) {
    case 'ok':
      return;
    case 'not_held':
      throw ended();
    case 'no_verbs':
      throw new ApiError(409, 'CALL_NOT_CONTROLLABLE', 'The call runs no verbs (a call between two phones).');
    case 'not_answered':
      throw new ApiError(409, 'CALL_NOT_ANSWERED', 'Keys can be sent once the call is answered.');
    case 'bridged':
      throw new ApiError(409, 'CALL_BRIDGED', 'Keys cannot be sent while a Dial bridges the call to another leg.');
  }
}
