import { z } from 'zod';
import { TOPUP_KEY_PREFIX } from '../../billing/index.js';
import {
  getAccount,
  insertApiKey,
  listApiKeys,
  listOwnedNumbers,
  listWalletTransactions,
  topupsByLedgerIds,
  mintStreamToken,
  newSigningSecret,
  revokeApiKey,
  updateAccount,
  type AccountRow,
} from '../../store/index.js';
import { authOf, freshAccount } from '../auth.js';
import { notFound } from '../errors.js';
import { accountOut, apiKeyOut, balanceOut, transactionOut, webhookConfigOut } from '../present.js';
import type { RouteDeps, RouteTable } from '../route-table.js';
import * as S from '../schemas.js';
import { parseBody, parseQuery, readJsonBody } from '../validation.js';

const COLUMN = {
  voice_inbound: 'webhook_voice_inbound',
  voice_outbound: 'webhook_voice_outbound',
  status: 'webhook_status',
} as const;

/** Account, webhooks, signing secret, API keys, wallet and stream token: the account's own settings. */
export function accountRoutes(t: RouteTable, d: RouteDeps): void {
  const fresh = async (id: string): Promise<AccountRow> => getAccount(d.db, id);
  const webhookConfig = async (id: string) => webhookConfigOut(await fresh(id), await listOwnedNumbers(d.db, id));

  t.add(
    {
      method: 'get',
      path: '/api/account',
      summary: 'The account',
      ok: { status: 200, schema: S.AccountOut },
      errors: [401],
    },
    async (ctx) => {
      ctx.body = accountOut(await freshAccount(ctx, d.db), d.config.sip.domain);
    },
  );

  t.add(
    {
      method: 'get',
      path: '/api/account/webhooks',
      summary: 'Webhook configuration',
      ok: { status: 200, schema: S.WebhookConfigOut },
      errors: [401],
    },
    async (ctx) => {
      ctx.body = await webhookConfig(authOf(ctx).account.id);
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/account/webhooks',
      summary: 'Set the default URL of one purpose and/or the fallback (only supplied fields change)',
      body: S.WebhooksUpdateBody,
      ok: { status: 200, schema: S.WebhookConfigOut },
      errors: [400, 401],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.WebhooksUpdateBody);
      const id = authOf(ctx).account.id;
      const patch: Partial<AccountRow> = {};
      // url: omitted or null leaves the purpose unchanged, "" clears it (spec, POST /api/account/webhooks).
      if (body.url != null) patch[COLUMN[body.purpose]] = body.url;
      if (body.fallback_mode != null) patch.fallback_mode = body.fallback_mode;
      if (body.fallback_value !== undefined) patch.fallback_value = body.fallback_value;
      if (Object.keys(patch).length) await updateAccount(d.db, id, patch);
      ctx.body = await webhookConfig(id);
    },
  );

  t.add(
    {
      method: 'get',
      path: '/api/account/webhooks/secret',
      summary: 'The signing secret of all webhooks',
      ok: { status: 200, schema: S.SigningSecretOut },
      errors: [401],
    },
    async (ctx) => {
      ctx.body = { signing_secret: (await fresh(authOf(ctx).account.id)).signing_secret };
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/account/webhooks/secret/rotate',
      summary: 'Replace the signing secret; the old one stops verifying at once',
      ok: { status: 200, schema: S.SigningSecretOut },
      errors: [401],
    },
    async (ctx) => {
      await readJsonBody(ctx); // no body is expected; a malformed one is still a 400
      const a = await updateAccount(d.db, authOf(ctx).account.id, { signing_secret: newSigningSecret() });
      ctx.body = { signing_secret: a.signing_secret };
    },
  );

  // ---- API keys ----
  t.add(
    {
      method: 'get',
      path: '/api/keys',
      summary: 'API keys (prefix and last use, never the secret)',
      ok: { status: 200, schema: z.array(S.ApiKeyOut) },
      errors: [401],
    },
    async (ctx) => {
      ctx.body = (await listApiKeys(d.db, authOf(ctx).account.id)).map(apiKeyOut);
    },
  );
  t.add(
    {
      method: 'post',
      path: '/api/keys/create',
      summary: 'Create an API key; the secret is returned only here',
      body: S.ApiKeyCreateBody,
      ok: { status: 201, schema: S.ApiKeyCreatedOut },
      errors: [400, 401],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.ApiKeyCreateBody);
      const { row, key } = await insertApiKey(d.db, authOf(ctx).account.id, body.name);
      ctx.status = 201;
      ctx.body = { ...apiKeyOut(row), key };
    },
  );
  t.add(
    {
      method: 'post',
      path: '/api/keys/revoke',
      summary: 'Revoke an API key (it then yields 401)',
      body: S.UuidBody,
      ok: { status: 200, schema: S.MessageOut },
      errors: [400, 401, 404],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.UuidBody);
      if (!(await revokeApiKey(d.db, authOf(ctx).account.id, body.uuid)))
        throw notFound('API key', 'API_KEY_NOT_FOUND');
      ctx.body = { message: 'The API key was revoked.' };
    },
  );

  // ---- wallet ----
  t.add(
    {
      method: 'get',
      path: '/api/wallet/balance',
      summary: 'Wallet balance',
      ok: { status: 200, schema: S.BalanceOut },
      errors: [401],
    },
    async (ctx) => {
      ctx.body = balanceOut(await freshAccount(ctx, d.db));
    },
  );
  t.add(
    {
      method: 'get',
      path: '/api/wallet/transactions',
      summary: 'Wallet transactions, newest first',
      query: S.TransactionListQuery,
      ok: { status: 200, schema: z.array(S.TransactionOut) },
      errors: [400, 401],
    },
    async (ctx) => {
      const q = parseQuery(ctx, S.TransactionListQuery);
      const rows = await listWalletTransactions(d.db, authOf(ctx).account.id, q.limit, q.offset);
      const topups = await topupsByLedgerIds(
        d.db,
        rows.filter((r) => r.settlement_key?.startsWith(TOPUP_KEY_PREFIX)).map((r) => r.id),
      );
      ctx.body = rows.map((r) => transactionOut(r, topups.get(r.id)));
    },
  );

  // ---- stream token ----
  t.add(
    {
      method: 'post',
      path: '/api/stream/token',
      summary: 'A single-use token for opening the event stream WebSocket',
      ok: { status: 200, schema: S.StreamTokenOut },
      errors: [401],
    },
    async (ctx) => {
      await readJsonBody(ctx);
      const ttl = d.config.tokens.streamTtlSeconds;
      const auth = authOf(ctx);
      const token = await mintStreamToken(d.db, auth.account.id, ttl, false, new Date(), auth.apiKeyId);
      ctx.body = { token, ttl_seconds: ttl };
    },
  );
}
