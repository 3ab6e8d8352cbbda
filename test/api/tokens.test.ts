import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { decodeJwt } from 'jose';
import { consumeStreamToken, mintStreamToken } from '../../store/index.js';
import { turnCredentials } from '../../api/index.js';
import { verifyPhoneToken, PhoneTokenRejectedError } from '../../sip/index.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from './harness.js';

describe('api tokens: phone tokens, TURN credentials, stream tokens', function () {
  this.timeout(30000);
  let h: ApiHarness;
  let t: Tenant;
  let user: { uuid: string; extension_number: string };

  before(async () => {
    h = await ApiHarness.start(sqliteDb);
    h.config.ice = {
      servers: [{ urls: 'stun:stun.example.test:3478' }],
      turnUrls: ['turn:turn.example.test:3478?transport=udp'],
      turnSecret: 'coturn-secret',
    };
    t = await h.tenant('Tokens', 0);
    user = (await h.req('POST', '/api/users/create', { key: t.key, body: { email: 'p@t.test' } })).body;
  });
  after(async () => h?.stop());

  const mint = (body: Record<string, unknown> = {}) =>
    h.req('POST', '/api/phone-tokens/mint', { key: t.key, body: { uuid: user.uuid, ...body } });

  it('the token is an HS256 JWT carrying account, end-user, extension, expiry and max_concurrent', async () => {
    const r = await mint({ ttl_seconds: 900, max_concurrent: 3 });
    const claims = decodeJwt(r.body.token);
    assert.equal(claims.acc, t.accountId);
    assert.equal(claims.sub, user.uuid);
    assert.equal(claims.ext, user.extension_number);
    assert.equal(claims.mc, 3);
    assert.equal(claims.jti, r.body.phone_token.uuid);
    assert.ok(Math.abs(Number(claims.exp) - (Date.now() / 1000 + 900)) < 5);
    assert.equal(JSON.parse(Buffer.from(r.body.token.split('.')[0], 'base64url').toString()).alg, 'HS256');
    const v = await verifyPhoneToken(h.db, h.secret, r.body.token);
    assert.deepEqual(
      { acc: v.accountId, user: v.endUserId, ext: v.extension, mc: v.maxConcurrent },
      { acc: t.accountId, user: user.uuid, ext: user.extension_number, mc: 3 },
    );
  });

  it('defaults: lifetime from config, max_concurrent 1', async () => {
    const r = await mint();
    assert.equal(r.body.phone_token.max_concurrent, 1);
    const ttl = (Date.parse(r.body.phone_token.expires_at) - Date.parse(r.body.phone_token.created_at)) / 1000;
    assert.ok(Math.abs(ttl - h.config.tokens.phoneTtlSeconds) < 5);
  });

  it('iceServers carries the configured servers plus coturn REST credentials', async () => {
    const r = await mint({ ttl_seconds: 600 });
    const ice = r.body.iceServers;
    assert.deepEqual(ice[0], { urls: 'stun:stun.example.test:3478' });
    const turn = ice[1];
    assert.deepEqual(turn.urls, ['turn:turn.example.test:3478?transport=udp']);
    const [expiry, ext] = turn.username.split(':');
    assert.equal(ext, user.extension_number);
    assert.equal(Number(expiry), Math.floor(Date.parse(r.body.phone_token.expires_at) / 1000));
    assert.equal(turn.credential, createHmac('sha1', 'coturn-secret').update(turn.username).digest('base64'));
    assert.deepEqual(turnCredentials('s', 1, '1001').username, '1:1001');
  });

  it('revocation is immediate; a forged, expired or foreign token is rejected', async () => {
    const r = await mint();
    await verifyPhoneToken(h.db, h.secret, r.body.token);
    await h.req('POST', '/api/phone-tokens/revoke', { key: t.key, body: { uuid: r.body.phone_token.uuid } });
    await assert.rejects(verifyPhoneToken(h.db, h.secret, r.body.token), (e: unknown) => {
      assert.ok(e instanceof PhoneTokenRejectedError);
      assert.equal(e.reason, 'revoked');
      assert.equal(e.code, 'AUTH.0401');
      return true;
    });
    const ok = await mint({ ttl_seconds: 60 });
    await assert.rejects(verifyPhoneToken(h.db, 'other-secret', ok.body.token), /malformed/);
    await assert.rejects(
      verifyPhoneToken(h.db, h.secret, ok.body.token, new Date(Date.now() + 120_000)),
      (e: unknown) => e instanceof PhoneTokenRejectedError && e.reason === 'expired',
    );
    await assert.rejects(verifyPhoneToken(h.db, h.secret, 'not.a.jwt'), PhoneTokenRejectedError);
  });

  it('disabling the end-user refuses its tokens until it is enabled again', async () => {
    const r = await mint();
    await h.req('POST', '/api/users/update', { key: t.key, body: { uuid: user.uuid, is_active: false } });
    await assert.rejects(verifyPhoneToken(h.db, h.secret, r.body.token), /end_user_inactive/);
    assert.equal((await mint()).status, 409, 'a disabled end-user gets no token');
    await h.req('POST', '/api/users/update', { key: t.key, body: { uuid: user.uuid, is_active: true } });
    await verifyPhoneToken(h.db, h.secret, r.body.token);
  });

  it('a stream token is single-use, even under concurrent use, and expires', async () => {
    const r = await h.req('POST', '/api/stream/token', { key: t.key });
    const results = await Promise.all(Array.from({ length: 20 }, () => consumeStreamToken(h.db, r.body.token)));
    const wins = results.filter((x) => x !== null);
    assert.equal(wins.length, 1);
    // The token remembers the key that minted it: the stream closes the socket when that key is revoked.
    const keyId = (await h.db('api_keys').where({ account_id: t.accountId }).first('id')).id;
    assert.deepEqual(wins[0], { accountId: t.accountId, staff: false, apiKeyId: keyId });
    const stored = await h.db('stream_tokens').select('token_hash');
    assert.ok(
      stored.every((s: { token_hash: string }) => s.token_hash !== r.body.token),
      'only the hash is stored',
    );
    const staff = await mintStreamToken(h.db, null, 30, true);
    assert.deepEqual(await consumeStreamToken(h.db, staff), { accountId: null, staff: true, apiKeyId: null });
    const old = await mintStreamToken(h.db, t.accountId, 5);
    assert.equal(await consumeStreamToken(h.db, old, new Date(Date.now() + 6000)), null);
    assert.equal(await consumeStreamToken(h.db, 'st_unknown'), null);
  });
});
