import { z } from 'zod';
import {
  deleteEndUser,
  insertEndUser,
  listEndUsers,
  updateEndUser,
  type CallHandlingPatch,
} from '../../store/index.js';
import { authOf } from '../auth.js';
import { notFound } from '../errors.js';
import { endUserOut } from '../present.js';
import { callHandlingPatch } from '../call-handling-schemas.js';
import type { RouteDeps, RouteTable } from '../route-table.js';
import * as S from '../schemas.js';
import { parseBody } from '../validation.js';

export function endUserRoutes(t: RouteTable, d: RouteDeps): void {
  t.add(
    {
      method: 'get',
      path: '/api/users',
      summary: 'End-users (softphone identities) of the account',
      ok: { status: 200, schema: z.array(S.EndUserOut) },
      errors: [401],
    },
    async (ctx) => {
      ctx.body = (await listEndUsers(d.db, authOf(ctx).account.id)).map(endUserOut);
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/users/create',
      summary: 'Create an end-user; the service assigns its extension (from 1001 per account)',
      body: S.EndUserCreateBody,
      ok: { status: 201, schema: S.EndUserOut },
      errors: [400, 401, 409],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.EndUserCreateBody);
      const u = await insertEndUser(d.db, authOf(ctx).account.id, body.email, body.display_name);
      ctx.status = 201;
      ctx.body = endUserOut(u);
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/users/update',
      summary:
        'Change display name, enable/disable, and (beyond the spec) DND, forwarding and voicemail; only supplied fields change',
      body: S.EndUserUpdateBody,
      ok: { status: 200, schema: S.EndUserOut },
      errors: [400, 401, 404],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.EndUserUpdateBody);
      const patch: { display_name?: string; is_active?: boolean } & CallHandlingPatch = callHandlingPatch(body);
      if (body.display_name != null) patch.display_name = body.display_name;
      if (body.is_active != null) patch.is_active = body.is_active;
      const u = await updateEndUser(d.db, authOf(ctx).account.id, body.uuid, patch);
      if (!u) throw notFound('End-user', 'END_USER_NOT_FOUND');
      ctx.body = endUserOut(u);
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/users/delete',
      summary: 'Delete an end-user and its phone tokens',
      body: S.UuidBody,
      ok: { status: 200, schema: S.MessageOut },
      errors: [400, 401, 404],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.UuidBody);
      if (!(await deleteEndUser(d.db, authOf(ctx).account.id, body.uuid)))
        throw notFound('End-user', 'END_USER_NOT_FOUND');
      ctx.body = { message: 'The end-user was deleted.' };
    },
  );
}
