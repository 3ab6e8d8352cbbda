import assert from 'node:assert/strict';
import type { z } from 'zod';
import * as S from '../../api/schemas.js';
import { insertCall } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness } from './harness.js';

/**
 * The OpenAPI document is generated from api/schemas.ts; this proves those response schemas describe what the
 * server actually sends (strictly: no undocumented field), so the description cannot drift from the responses.
 */
describe('api responses conform to the schemas the OpenAPI document is made from', function () {
  this.timeout(30000);
  let h: ApiHarness;
  after(async () => h?.stop());

  it('every resource, parsed strictly', async () => {
    h = await ApiHarness.start(sqliteDb);
    const t = await h.tenant('Conform', 50_000, '+254700000601');
    const strict = (schema: z.ZodType, body: unknown, what: string) => {
      const s = (schema as unknown as { strict?: () => z.ZodType }).strict?.() ?? schema;
      const r = s.safeParse(body);
      assert.ok(r.success, `${what}: ${r.success ? '' : JSON.stringify(r.error.issues)}`);
    };
    const get = async (p: string) => (await h.req('GET', p, { key: t.key })).body;
    const post = async (p: string, body?: unknown) => (await h.req('POST', p, { key: t.key, body })).body;

    const call = await post('/api/calls/originate', {
      to: '+254711000001',
      from: '+254700000601',
      url: 'https://c.test/',
    });
    strict(S.CallOut, call, 'originate');
    await insertCall(h.db, { account_id: t.accountId, direction: 'inbound', from_number: '+1', to_number: '+2' });
    const list = await get('/api/calls');
    strict(S.CallListOut, list, 'list');
    for (const c of list.calls) strict(S.CallOut, c, 'listed call');
    strict(S.CallOut, await get(`/api/calls/${call.uuid}`), 'get call');
    strict(S.CallOut, await post('/api/calls/hangup', { sid: call.sid }), 'hangup');
    for (const n of await get('/api/numbers')) strict(S.NumberOut, n, 'number');
    strict(S.AccountOut, await get('/api/account'), 'account');
    strict(S.WebhookConfigOut, await get('/api/account/webhooks'), 'webhooks');
    strict(S.SigningSecretOut, await get('/api/account/webhooks/secret'), 'secret');
    strict(S.BalanceOut, await get('/api/wallet/balance'), 'balance');
    for (const x of await get('/api/wallet/transactions')) strict(S.TransactionOut, x, 'transaction');
    const created = await post('/api/keys/create', { name: 'k' });
    strict(S.ApiKeyCreatedOut, created, 'key created');
    for (const k of await get('/api/keys')) strict(S.ApiKeyOut, k, 'key');
    const u = await post('/api/users/create', { email: 'c@c.test' });
    strict(S.EndUserOut, u, 'end-user');
    const minted = await post('/api/phone-tokens/mint', { uuid: u.uuid });
    strict(S.PhoneTokenMintOut, minted, 'mint');
    strict(S.PhoneTokenOut, minted.phone_token, 'phone token');
    strict(S.StreamTokenOut, await post('/api/stream/token'), 'stream token');
    strict(S.MessageOut, await post('/api/keys/revoke', { uuid: created.uuid }), 'message');
    strict(S.ErrorOut, await get('/api/calls/nope'), 'error');
    strict(S.HealthOut, (await h.req('GET', '/api/health')).body, 'health');
  });
});
