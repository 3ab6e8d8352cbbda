import { findEndUser, insertPhoneToken, revokePhoneToken } from '../../store/index.js';
import { authOf } from '../auth.js';
import { ApiError, notFound } from '../errors.js';
import { phoneTokenOut } from '../present.js';
import type { RouteDeps, RouteTable } from '../route-table.js';
import * as S from '../schemas.js';
import { signPhoneToken } from '../../sip/index.js';
import { iceServersFor } from '../signing.js';
import { parseBody } from '../validation.js';

/** max_concurrent when the mint request leaves it out (docs/api.md). */
export const DEFAULT_MAX_CONCURRENT = 1;

export function phoneTokenRoutes(t: RouteTable, d: RouteDeps): void {
  t.add(
    {
      method: 'post',
      path: '/api/phone-tokens/mint',
      summary: "Mint a short-lived phone token for one end-user, with the browser's iceServers",
      body: S.PhoneTokenMintBody,
      ok: { status: 200, schema: S.PhoneTokenMintOut },
      errors: [400, 401, 404, 409],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.PhoneTokenMintBody);
      const account = authOf(ctx).account;
      const ttl = body.ttl_seconds ?? d.config.tokens.phoneTtlSeconds;
      const maxTtl = d.config.tokens.phoneMaxTtlSeconds;
      if (ttl > maxTtl)
        throw new ApiError(
          400,
          'VALIDATION_ERROR',
          `Invalid request body: the field "ttl_seconds" is invalid: expected at most ${maxTtl}.`,
        );
      const user = await findEndUser(d.db, account.id, body.uuid);
      if (!user) throw notFound('End-user', 'END_USER_NOT_FOUND');
      if (!user.is_active) throw new ApiError(409, 'END_USER_INACTIVE', 'The end-user is disabled; enable it first.');
      const issuedAt = Math.floor(Date.now() / 1000);
      const expiresAt = issuedAt + ttl;
      const row = await insertPhoneToken(d.db, {
        account_id: account.id,
        end_user_id: user.id,
        extension_number: user.extension_number,
        max_concurrent: body.max_concurrent ?? DEFAULT_MAX_CONCURRENT,
        expires_at: new Date(expiresAt * 1000).toISOString(),
        issued_at: issuedAt,
      });
      const token = await signPhoneToken(
        d.signUrlSecret,
        {
          tokenId: row.id,
          accountId: account.id,
          endUserId: user.id,
          extension: user.extension_number,
          maxConcurrent: row.max_concurrent,
          expiresAt,
        },
        issuedAt,
      );
      ctx.body = {
        token,
        phone_token: phoneTokenOut(row),
        iceServers: iceServersFor(d.config.ice, expiresAt, user.extension_number),
      };
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/phone-tokens/revoke',
      summary: 'Revoke a phone token (immediate)',
      body: S.UuidBody,
      ok: { status: 200, schema: S.MessageOut },
      errors: [400, 401, 404],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.UuidBody);
      if (!(await revokePhoneToken(d.db, authOf(ctx).account.id, body.uuid)))
        throw notFound('Phone token', 'PHONE_TOKEN_NOT_FOUND');
      ctx.body = { message: 'The phone token was revoked.' };
    },
  );
}
