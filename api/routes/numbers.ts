import { configureNumber, listOwnedNumbers, listPool, type NumberPatch } from '../../store/index.js';
import { authOf, freshAccount } from '../auth.js';
import { notFound } from '../errors.js';
import { withIdempotency } from '../idempotency.js';
import { acquireNumber, releaseNumber } from '../number-acquisition.js';
import { numberOut } from '../present.js';
import type { RouteDeps, RouteTable } from '../route-table.js';
import * as S from '../schemas.js';
import { parseBody } from '../validation.js';
import { z } from 'zod';

export function numberRoutes(t: RouteTable, d: RouteDeps): void {
  t.add(
    {
      method: 'get',
      path: '/api/numbers',
      summary: 'Numbers owned by the account',
      ok: { status: 200, schema: z.array(S.NumberOut) },
      errors: [401],
    },
    async (ctx) => {
      const account = await freshAccount(ctx, d.db); // its default webhooks show through
      ctx.body = (await listOwnedNumbers(d.db, account.id)).map((n) => numberOut(n, account));
    },
  );

  t.add(
    {
      method: 'get',
      path: '/api/numbers/available',
      summary: 'The pool of acquirable numbers',
      ok: { status: 200, schema: z.array(S.AvailableNumberOut) },
      errors: [401],
    },
    async (ctx) => {
      ctx.body = (await listPool(d.db)).map((n) => ({ uuid: n.id, number: n.number }));
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/numbers/acquire',
      summary: 'Acquire a pool number; charges the did_setup fee once',
      body: S.UuidBody,
      idempotent: true,
      ok: { status: 200, schema: S.NumberOut },
      errors: [400, 401, 402, 404, 409, 422],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.UuidBody);
      const account = await freshAccount(ctx, d.db);
      await withIdempotency(ctx, d.db, account.id, 'numbers.acquire', body, async () => {
        const n = await acquireNumber(d.db, account.id, body.uuid);
        return { status: 200, body: numberOut(n, account) };
      });
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/numbers/release',
      summary: 'Return an owned number to the pool',
      body: S.UuidBody,
      ok: { status: 200, schema: S.MessageOut },
      errors: [400, 401, 404],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.UuidBody);
      if (!(await releaseNumber(d.db, authOf(ctx).account.id, body.uuid))) throw notFound('Number', 'NUMBER_NOT_FOUND');
      ctx.body = { message: 'The number was released to the pool.' };
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/numbers/configure',
      summary: "Set a number's webhook overrides and friendly name (only supplied fields change)",
      body: S.ConfigureNumberBody,
      ok: { status: 200, schema: S.NumberOut },
      errors: [400, 401, 404],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.ConfigureNumberBody);
      const account = await freshAccount(ctx, d.db);
      const patch: NumberPatch = {};
      if (body.friendly_name != null) patch.friendly_name = body.friendly_name;
      const urls = body.webhook_urls ?? {};
      if (urls.voice_inbound !== undefined) patch.webhook_voice_inbound = urls.voice_inbound;
      if (urls.voice_outbound !== undefined) patch.webhook_voice_outbound = urls.voice_outbound;
      if (urls.status !== undefined) patch.webhook_status = urls.status;
      const row = await configureNumber(d.db, account.id, body.uuid, patch);
      if (!row) throw notFound('Number', 'NUMBER_NOT_FOUND');
      ctx.body = numberOut(row, account);
    },
  );
}
