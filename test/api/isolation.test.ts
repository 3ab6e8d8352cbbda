import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { insertRecording } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from './harness.js';

/**
 * Tenant isolation: account B tries every endpoint that takes an id with account A's ids. Each attempt must be a
 * 404 (never a 403, which would leak existence) and must change nothing of A's.
 */
describe('api tenant isolation', function () {
  this.timeout(30000);
  let h: ApiHarness;
  let a: Tenant;
  let b: Tenant;
  const ids: Record<string, string> = {};

  before(async () => {
    h = await ApiHarness.start(sqliteDb);
    a = await h.tenant('Alpha', 100_000, '+254700000401');
    b = await h.tenant('Bravo', 100_000, '+254700000402');
    const call = await h.req('POST', '/api/calls/originate', {
      key: a.key,
      body: { to: '+254711000001', from: '+254700000401', url: 'https://a.test/v' },
    });
    ids.call = call.body.uuid;
    ids.sid = call.body.sid;
    ids.number = (await h.req('GET', '/api/numbers', { key: a.key })).body[0].uuid;
    const u = await h.req('POST', '/api/users/create', { key: a.key, body: { email: 'a@a.test' } });
    ids.user = u.body.uuid;
    ids.token = (
      await h.req('POST', '/api/phone-tokens/mint', { key: a.key, body: { uuid: ids.user } })
    ).body.phone_token.uuid;
    ids.key = (await h.req('POST', '/api/keys/create', { key: a.key, body: { name: 'k' } })).body.uuid;
    const dir = path.join(h.config.dataDir, 'recordings');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'a.wav'), Buffer.alloc(100));
    ids.recording = (
      await insertRecording(h.db, {
        account_id: a.accountId,
        call_id: ids.call,
        call_sid: ids.sid,
        storage_path: path.join(dir, 'a.wav'),
      })
    ).id;
  });
  after(async () => h?.stop());

  const attempts: Array<[string, string, (i: Record<string, string>) => unknown]> = [
    ['GET', '/api/calls/:call', () => undefined],
    ['POST', '/api/calls/hangup', (i) => ({ sid: i.sid })],
    ['GET', '/api/calls/hangup?sid=:sid', () => undefined],
    ['GET', '/api/calls/hangup/:sid', () => undefined],
    ['POST', '/api/numbers/release', (i) => ({ uuid: i.number })],
    ['POST', '/api/numbers/configure', (i) => ({ uuid: i.number, friendly_name: 'stolen' })],
    ['POST', '/api/numbers/acquire', (i) => ({ uuid: i.number })],
    ['POST', '/api/recordings/download', (i) => ({ uuid: i.recording })],
    ['POST', '/api/recordings/delete', (i) => ({ uuid: i.recording })],
    ['POST', '/api/phone-tokens/mint', (i) => ({ uuid: i.user })],
    ['POST', '/api/phone-tokens/revoke', (i) => ({ uuid: i.token })],
    ['POST', '/api/users/update', (i) => ({ uuid: i.user, display_name: 'stolen' })],
    ['POST', '/api/users/delete', (i) => ({ uuid: i.user })],
    ['POST', '/api/keys/revoke', (i) => ({ uuid: i.key })],
  ];

  for (const [method, template, body] of attempts) {
    it(`${method} ${template} with another account's id is refused without a leak`, async () => {
      const p = template.replace(/:(\w+)/g, (_, k: string) => ids[k]);
      const r = await h.req(method, p, { key: b.key, body: body(ids) });
      // Acquire of a number someone owns is "already taken" (409) for everyone, the owner included: no leak.
      const expected = template === '/api/numbers/acquire' ? 409 : 404;
      assert.equal(r.status, expected, `${r.status} ${r.text}`);
      assert.ok(!r.text.includes(a.accountId), 'no trace of the other account');
    });
  }

  it("lists never show another account's rows, and A's data is untouched", async () => {
    for (const p of [
      '/api/calls',
      '/api/numbers',
      '/api/recordings',
      '/api/users',
      '/api/keys',
      '/api/wallet/transactions',
    ]) {
      const r = await h.req('GET', p, { key: b.key });
      assert.equal(r.status, 200);
      for (const id of Object.values(ids)) assert.ok(!r.text.includes(id), `${p} does not show ${id}`);
    }
    const call = await h.req('GET', `/api/calls/${ids.call}`, { key: a.key });
    assert.equal(call.body.status, 'initiated', 'not hung up by B');
    const n = (await h.req('GET', '/api/numbers', { key: a.key })).body[0];
    assert.equal(n.friendly_name, '');
    assert.equal((await h.req('GET', '/api/recordings', { key: a.key })).body.length, 1);
    const users = (await h.req('GET', '/api/users', { key: a.key })).body;
    assert.equal(users[0].display_name, '');
    const keys = (await h.req('GET', '/api/keys', { key: a.key })).body;
    assert.ok(keys.find((k: any) => k.uuid === ids.key).is_active);
    const tok = await h.db('phone_tokens').where({ id: ids.token }).first();
    assert.equal(tok.revoked_at, null);
  });

  it('idempotency keys are per account: the same key in two accounts runs twice', async () => {
    const body = { to: '+254711000002', url: 'https://a.test/v' };
    const ra = await h.req('POST', '/api/calls/originate', {
      key: a.key,
      body: { ...body, from: '+254700000401' },
      headers: { 'idempotency-key': 'shared-key' },
    });
    const rb = await h.req('POST', '/api/calls/originate', {
      key: b.key,
      body: { ...body, from: '+254700000402' },
      headers: { 'idempotency-key': 'shared-key' },
    });
    assert.equal(ra.status, 201);
    assert.equal(rb.status, 201);
    assert.notEqual(ra.body.uuid, rb.body.uuid);
  });
});
