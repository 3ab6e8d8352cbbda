import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { addPoolNumbers, insertCall, insertRecording, setRate, updateAccount } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from './harness.js';
import * as SH from './shapes.js';

/** A small valid WAV file (8 kHz mono 16-bit PCM) of `samples` samples. */
export function wav(samples: number): Buffer {
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) data.writeInt16LE(Math.round(8000 * Math.sin(i / 5)), i * 2);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0);
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVEfmt ', 8);
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(8000, 24);
  h.writeUInt32LE(16000, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36);
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

describe('api contract (every endpoint, statuses and full shapes)', function () {
  this.timeout(30000);
  let h: ApiHarness;
  let t: Tenant;
  const DID = '+254700000101';

  before(async () => {
    h = await ApiHarness.start(sqliteDb);
    t = await h.tenant('Contract', 100_000, DID);
  });
  after(async () => h?.stop());

  describe('auth and errors', () => {
    it('health needs no key and answers ok, or 503 degraded', async () => {
      let r = await h.req('GET', '/api/health/');
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, { status: 'ok' });
      h.health = { store: true, media: false };
      r = await h.req('GET', '/api/health');
      assert.equal(r.status, 503);
      assert.deepEqual(r.body, { status: 'degraded' });
      h.health = { store: true, media: true };
    });

    it('a missing, unknown or malformed key is a 401 with { detail, code }', async () => {
      SH.assertError(await h.req('GET', '/api/account/'), 401, 'AUTH_INVALID_KEY');
      SH.assertError(await h.req('GET', '/api/account/', { key: 'sk_nope' }), 401);
      SH.assertError(
        await h.req('GET', '/api/account/', { headers: { authorization: `Basic ${t.key}` } }),
        401,
        'AUTH_INVALID_KEY',
      );
    });

    it('a revoked key is a 401, and a key of a suspended account is a 401', async () => {
      const other = await h.tenant('Revokable', 0);
      const created = await h.req('POST', '/api/keys/create', { key: other.key, body: { name: 'second' } });
      assert.equal(created.status, 201);
      // Used once first, so that authentication remembers it: the revocation must still take effect at once.
      assert.equal((await h.req('GET', '/api/account/', { key: created.body.key })).status, 200);
      const r = await h.req('POST', '/api/keys/revoke', { key: other.key, body: { uuid: created.body.uuid } });
      assert.equal(r.status, 200);
      SH.assertShape(r.body, SH.MESSAGE);
      SH.assertError(await h.req('GET', '/api/account/', { key: created.body.key }), 401);
      assert.equal((await h.req('GET', '/api/account/', { key: other.key })).status, 200);
      await updateAccount(h.db, other.accountId, { status: 'suspended' });
      SH.assertError(await h.req('GET', '/api/account/', { key: other.key }), 401, 'AUTH_ACCOUNT_SUSPENDED');
    });

    it('a key revoked by another process (the CLI, a direct write) is refused within a second', async () => {
      const other = await h.tenant('Elsewhere', 0);
      assert.equal((await h.req('GET', '/api/account/', { key: other.key })).status, 200);
      await h.db('api_keys').where({ account_id: other.accountId }).update({ is_active: false });
      const started = Date.now();
      let status = 200;
      while (status === 200 && Date.now() - started < 3000) {
        status = (await h.req('GET', '/api/account/', { key: other.key })).status;
        if (status === 200) await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(status, 401);
      assert.ok(Date.now() - started <= 2500, `refused after ${Date.now() - started} ms (the cache keeps 1 s)`);
    });

    it('malformed JSON is a 400, never a 500', async () => {
      SH.assertError(await h.req('POST', '/api/users/create', { key: t.key, raw: '{"email":' }), 400, 'MALFORMED_JSON');
      SH.assertError(await h.req('POST', '/api/numbers/acquire', { key: t.key, raw: 'nope' }), 400, 'MALFORMED_JSON');
    });

    it('validation errors name the field and what was expected', async () => {
      for (const limit of ['0', '201', 'abc', '1.5']) {
        const r = await h.req('GET', `/api/calls/?limit=${limit}`, { key: t.key });
        SH.assertError(r, 400, 'VALIDATION_ERROR');
        assert.match(r.body.detail, /"limit".*integer from 1 to 200/);
      }
      const r = await h.req('POST', '/api/calls/originate', {
        key: t.key,
        body: { to: '0712', from: DID, url: 'http://x.test/' },
      });
      SH.assertError(r, 400, 'VALIDATION_ERROR');
      assert.match(r.body.detail, /"to".*E\.164/);
      const m = await h.req('POST', '/api/users/create', { key: t.key, body: {} });
      assert.match(m.body.detail, /"email" is required/);
    });

    it('paths answer with and without the trailing slash', async () => {
      for (const p of [
        '/api/calls',
        '/api/numbers',
        '/api/numbers/available',
        '/api/recordings',
        '/api/users',
        '/api/account',
        '/api/account/webhooks',
        '/api/keys',
        '/api/wallet/balance',
        '/api/wallet/transactions',
      ]) {
        const a = await h.req('GET', p, { key: t.key });
        const b = await h.req('GET', `${p}/`, { key: t.key });
        assert.equal(a.status, 200, p);
        assert.equal(b.status, 200, `${p}/`);
      }
      assert.equal((await h.req('POST', '/api/stream/token/', { key: t.key })).status, 200);
    });

    it('an unknown route is a 404 with the error body', async () => {
      SH.assertError(await h.req('GET', '/api/nothing-here', { key: t.key }), 404, 'ROUTE_NOT_FOUND');
    });
  });

  describe('calls', () => {
    it('originate answers 201 with the call as initiated and hands it to the engine', async () => {
      const r = await h.req('POST', '/api/calls/originate', {
        key: t.key,
        body: { to: '+254711000001', from: DID, url: 'https://example.test/voice', customPayload: { order: 7 } },
      });
      assert.equal(r.status, 201, r.text);
      SH.assertShape(r.body, SH.CALL, SH.CALL_OPTIONAL, 'call');
      assert.equal(r.body.status, 'initiated');
      assert.equal(r.body.direction, 'outbound');
      assert.equal(r.body.from_number, DID);
      assert.equal(r.body.to_number, '+254711000001');
      assert.match(r.body.sid, /^call_/);
      assert.equal(r.body.cost, '0.00');
      assert.deepEqual(r.body.customPayload, { order: 7 });
      assert.match(r.body.created_at, SH.ISO);
      const handed = h.engine.originated.find((o) => o.call.id === r.body.uuid);
      assert.ok(handed, 'the engine received the call');
      assert.equal(handed.timeoutSeconds, 30);
    });

    it('originate refuses a from that is not an active number of the account (422)', async () => {
      const r = await h.req('POST', '/api/calls/originate', {
        key: t.key,
        body: { to: '+254711000001', from: '+254799999999', url: 'https://example.test/voice' },
      });
      SH.assertError(r, 422, 'FROM_NOT_OWNED');
      const u = await h.req('POST', '/api/calls/originate', {
        key: t.key,
        body: { to: '+254711000001', from: DID, url: 'ftp://example.test/voice' },
      });
      SH.assertError(u, 400, 'VALIDATION_ERROR');
      assert.match(u.body.detail, /"url"/);
    });

    it('get by uuid returns the call; an unknown uuid is a 404', async () => {
      const o = await h.req('POST', '/api/calls/originate', {
        key: t.key,
        body: { to: '+254711000002', from: DID, url: 'https://example.test/voice' },
      });
      const r = await h.req('GET', `/api/calls/${o.body.uuid}`, { key: t.key });
      assert.equal(r.status, 200);
      SH.assertShape(r.body, SH.CALL, SH.CALL_OPTIONAL);
      assert.deepEqual(r.body, o.body);
      assert.equal((await h.req('GET', `/api/calls/${o.body.uuid}/`, { key: t.key })).status, 200);
      SH.assertError(await h.req('GET', '/api/calls/00000000-0000-0000-0000-000000000000', { key: t.key }), 404);
    });

    it('hangup in all three forms ends a live call and is idempotent', async () => {
      const forms = [
        (sid: string) => h.req('POST', '/api/calls/hangup', { key: t.key, body: { sid } }),
        (sid: string) => h.req('GET', `/api/calls/hangup?sid=${sid}`, { key: t.key }),
        (sid: string) => h.req('GET', `/api/calls/hangup/${sid}`, { key: t.key }),
      ];
      for (const form of forms) {
        const o = await h.req('POST', '/api/calls/originate', {
          key: t.key,
          body: { to: '+254711000003', from: DID, url: 'https://example.test/voice' },
        });
        const first = await form(o.body.sid);
        assert.equal(first.status, 200, first.text);
        SH.assertShape(first.body, SH.CALL, SH.CALL_OPTIONAL);
        assert.equal(first.body.status, 'failed');
        assert.equal(first.body.reason_code, 'END.0487');
        assert.match(first.body.ended_at, SH.ISO);
        for (const again of forms) assert.deepEqual((await again(o.body.sid)).body, first.body, 'unchanged');
      }
      SH.assertError(await h.req('GET', '/api/calls/hangup/call_unknown', { key: t.key }), 404, 'CALL_NOT_FOUND');
      SH.assertError(await h.req('GET', '/api/calls/hangup', { key: t.key }), 400, 'VALIDATION_ERROR');
    });

    it('hangup of a record shown live that the switch no longer holds closes it as END.0504', async () => {
      const c = await insertCall(h.db, {
        account_id: t.accountId,
        direction: 'inbound',
        from_number: '+254722000000',
        to_number: DID,
        status: 'answered',
        started_at: new Date(Date.now() - 10_000).toISOString(),
      });
      const r = await h.req('POST', '/api/calls/hangup', { key: t.key, body: { sid: c.sid } });
      assert.equal(r.status, 200);
      assert.equal(r.body.reason_code, 'END.0504');
      assert.equal(r.body.status, 'completed');
      assert.ok(r.body.duration_seconds >= 9);
    });

    it('list: envelope, newest first, every filter, total under the filters', async () => {
      const acct = await h.tenant('Lister', 0);
      const base = Date.parse('2026-01-01T00:00:00Z');
      for (let i = 0; i < 30; i++)
        await insertCall(h.db, {
          account_id: acct.accountId,
          direction: i % 3 === 0 ? 'inbound' : 'outbound',
          from_number: `+2547000${String(i).padStart(5, '0')}`,
          to_number: i % 2 ? '+254733111222' : '+254744555666',
          status: i % 5 === 0 ? 'failed' : 'completed',
          created_at: new Date(base + i * 60_000).toISOString(),
        });
      const all = await h.req('GET', '/api/calls/', { key: acct.key });
      assert.equal(all.status, 200);
      assert.deepEqual(Object.keys(all.body).sort(), ['calls', 'limit', 'offset', 'total']);
      assert.equal(all.body.total, 30);
      assert.equal(all.body.limit, 50);
      assert.equal(all.body.offset, 0);
      for (const c of all.body.calls) SH.assertShape(c, SH.CALL, SH.CALL_OPTIONAL);
      const times = all.body.calls.map((c: any) => c.created_at);
      assert.deepEqual(times, [...times].sort().reverse(), 'newest first');

      const page = await h.req('GET', '/api/calls?limit=7&offset=7', { key: acct.key });
      assert.equal(page.body.calls.length, 7);
      assert.equal(page.body.total, 30);
      assert.deepEqual(
        page.body.calls.map((c: any) => c.uuid),
        all.body.calls.slice(7, 14).map((c: any) => c.uuid),
      );
      const inbound = await h.req('GET', '/api/calls?direction=inbound', { key: acct.key });
      assert.equal(inbound.body.total, 10);
      assert.ok(inbound.body.calls.every((c: any) => c.direction === 'inbound'));
      const failed = await h.req('GET', '/api/calls?status=failed', { key: acct.key });
      assert.equal(failed.body.total, 6);
      const search = await h.req('GET', '/api/calls?search=33111', { key: acct.key });
      assert.equal(search.body.total, 15);
      const byFrom = await h.req('GET', '/api/calls?search=%2B254700000012', { key: acct.key });
      assert.equal(byFrom.body.total, 1);
      const like = await h.req('GET', '/api/calls?search=%25', { key: acct.key });
      assert.equal(like.body.total, 0, 'LIKE wildcards are literal');
      const window = await h.req(
        'GET',
        `/api/calls?from_dt=${encodeURIComponent('2026-01-01T00:10:00Z')}&to_dt=${encodeURIComponent('2026-01-01T00:19:00Z')}`,
        { key: acct.key },
      );
      assert.equal(window.body.total, 10);
      const combined = await h.req('GET', '/api/calls?direction=outbound&status=completed&search=44555', {
        key: acct.key,
      });
      assert.ok(combined.body.calls.every((c: any) => c.direction === 'outbound' && c.status === 'completed'));
      assert.equal(combined.body.total, combined.body.calls.length);
      SH.assertError(await h.req('GET', '/api/calls?status=bogus', { key: acct.key }), 400);
      SH.assertError(await h.req('GET', '/api/calls?from_dt=yesterday', { key: acct.key }), 400);
      SH.assertError(await h.req('GET', '/api/calls?offset=-1', { key: acct.key }), 400);
    });

    it('the list total follows new calls at once', async () => {
      const acct = await h.tenant('Fresh', 0);
      assert.equal((await h.req('GET', '/api/calls', { key: acct.key })).body.total, 0);
      await insertCall(h.db, { account_id: acct.accountId, direction: 'inbound', from_number: '+1', to_number: '+2' });
      assert.equal((await h.req('GET', '/api/calls', { key: acct.key })).body.total, 1);
    });
  });

  describe('numbers', () => {
    it('available lists the pool; acquire charges did_setup and returns the Number', async () => {
      await addPoolNumbers(h.db, ['+254700000201', '+254700000202']);
      await setRate(h.db, 'did_setup', 2500);
      const avail = await h.req('GET', '/api/numbers/available', { key: t.key });
      assert.equal(avail.status, 200);
      for (const n of avail.body) SH.assertShape(n, SH.AVAILABLE);
      const target = avail.body.find((n: any) => n.number === '+254700000201');
      assert.ok(target);
      const before = (await h.req('GET', '/api/wallet/balance', { key: t.key })).body.balance;
      const r = await h.req('POST', '/api/numbers/acquire', { key: t.key, body: { uuid: target.uuid } });
      assert.equal(r.status, 200, r.text);
      SH.assertShape(r.body, SH.NUMBER);
      assert.equal(r.body.is_active, true);
      assert.deepEqual(r.body.webhook_urls, { voice_inbound: '', voice_outbound: '', status: '' });
      assert.deepEqual(r.body.webhook_inbound, { url: '', source: 'none' });
      const after = (await h.req('GET', '/api/wallet/balance', { key: t.key })).body.balance;
      assert.equal(Math.round((Number(before) - Number(after)) * 100), 2500);
      const tx = await h.req('GET', '/api/wallet/transactions?limit=1', { key: t.key });
      assert.equal(tx.body[0].kind, 'did_setup');
      assert.equal(tx.body[0].direction, 'debit');
      assert.equal(tx.body[0].amount, '25.00');
      SH.assertError(await h.req('POST', '/api/numbers/acquire', { key: t.key, body: { uuid: target.uuid } }), 409);
      SH.assertError(
        await h.req('POST', '/api/numbers/acquire', { key: t.key, body: { uuid: 'no-such-number' } }),
        404,
        'NUMBER_NOT_FOUND',
      );
      const owned = await h.req('GET', '/api/numbers/', { key: t.key });
      assert.ok(owned.body.some((n: any) => n.uuid === target.uuid));
      for (const n of owned.body) SH.assertShape(n, SH.NUMBER);
      await setRate(h.db, 'did_setup', 0);
    });

    it('acquire with a balance that does not cover the fee is a 402 and takes nothing', async () => {
      const poor = await h.tenant('Poor', 100);
      await addPoolNumbers(h.db, ['+254700000203']);
      await setRate(h.db, 'did_setup', 2500);
      const avail = await h.req('GET', '/api/numbers/available', { key: poor.key });
      const n = avail.body.find((x: any) => x.number === '+254700000203');
      SH.assertError(
        await h.req('POST', '/api/numbers/acquire', { key: poor.key, body: { uuid: n.uuid } }),
        402,
        'BILL.0402',
      );
      assert.equal((await h.req('GET', '/api/numbers', { key: poor.key })).body.length, 0);
      await setRate(h.db, 'did_setup', 0);
    });

    it('configure changes only supplied fields; a blank URL clears the override; inbound resolves', async () => {
      const n = (await h.req('GET', '/api/numbers', { key: t.key })).body.find((x: any) => x.number === DID);
      let r = await h.req('POST', '/api/numbers/configure', {
        key: t.key,
        body: { uuid: n.uuid, friendly_name: 'Main line', webhook_urls: { voice_inbound: 'https://a.test/in' } },
      });
      assert.equal(r.status, 200, r.text);
      SH.assertShape(r.body, SH.NUMBER);
      assert.equal(r.body.friendly_name, 'Main line');
      assert.deepEqual(r.body.webhook_inbound, { url: 'https://a.test/in', source: 'custom' });
      r = await h.req('POST', '/api/numbers/configure', {
        key: t.key,
        body: { uuid: n.uuid, webhook_urls: { status: 'https://a.test/st' } },
      });
      assert.equal(r.body.friendly_name, 'Main line', 'unchanged');
      assert.equal(r.body.webhook_urls.voice_inbound, 'https://a.test/in', 'omitted key unchanged');
      assert.equal(r.body.webhook_urls.status, 'https://a.test/st');
      await h.req('POST', '/api/account/webhooks', {
        key: t.key,
        body: { purpose: 'voice_inbound', url: 'https://d.test/in' },
      });
      r = await h.req('POST', '/api/numbers/configure', {
        key: t.key,
        body: { uuid: n.uuid, webhook_urls: { voice_inbound: '' } },
      });
      assert.deepEqual(r.body.webhook_inbound, { url: 'https://d.test/in', source: 'default' });
      SH.assertError(
        await h.req('POST', '/api/numbers/configure', {
          key: t.key,
          body: { uuid: n.uuid, webhook_urls: { voice_inbund: 'https://x.test' } },
        }),
        400,
      );
      SH.assertError(
        await h.req('POST', '/api/numbers/configure', { key: t.key, body: { uuid: 'nope', friendly_name: 'x' } }),
        404,
      );
    });

    it('release returns the number to the pool with a message', async () => {
      await addPoolNumbers(h.db, ['+254700000204']);
      const avail = await h.req('GET', '/api/numbers/available', { key: t.key });
      const n = avail.body.find((x: any) => x.number === '+254700000204');
      await h.req('POST', '/api/numbers/acquire', { key: t.key, body: { uuid: n.uuid } });
      const r = await h.req('POST', '/api/numbers/release', { key: t.key, body: { uuid: n.uuid } });
      assert.equal(r.status, 200);
      SH.assertShape(r.body, SH.MESSAGE);
      assert.ok(
        (await h.req('GET', '/api/numbers/available', { key: t.key })).body.some((x: any) => x.uuid === n.uuid),
      );
      SH.assertError(await h.req('POST', '/api/numbers/release', { key: t.key, body: { uuid: n.uuid } }), 404);
    });
  });

  describe('recordings', () => {
    let recId: string;
    let file: Buffer;
    before(async () => {
      const c = await insertCall(h.db, {
        account_id: t.accountId,
        direction: 'outbound',
        from_number: DID,
        to_number: '+254711000009',
        status: 'completed',
      });
      const dir = path.join(h.config.dataDir, 'recordings');
      mkdirSync(dir, { recursive: true });
      file = wav(4000);
      const p = path.join(dir, 'r1.wav');
      writeFileSync(p, file);
      const r = await insertRecording(h.db, {
        account_id: t.accountId,
        call_id: c.id,
        call_sid: c.sid,
        duration_seconds: 1,
        size_bytes: file.length,
        storage_path: p,
      });
      recId = r.id;
    });

    it('list with the call filter and bounds', async () => {
      const r = await h.req('GET', '/api/recordings/', { key: t.key });
      assert.equal(r.status, 200);
      assert.equal(r.body.length, 1);
      SH.assertShape(r.body[0], SH.RECORDING, SH.RECORDING_BEYOND_SPEC);
      assert.equal(r.body[0].media_format, 'wav');
      assert.equal(r.body[0].storage_backend, 'local');
      const byCall = await h.req('GET', `/api/recordings?call_uuid=${r.body[0].call_uuid}`, { key: t.key });
      assert.equal(byCall.body.length, 1);
      assert.equal((await h.req('GET', '/api/recordings?call_uuid=other', { key: t.key })).body.length, 0);
      SH.assertError(await h.req('GET', '/api/recordings?limit=500', { key: t.key }), 400);
    });

    it('download gives a signed, expiring URL served with Range and audio/wav, without an API key', async () => {
      const r = await h.req('POST', '/api/recordings/download', { key: t.key, body: { uuid: recId } });
      assert.equal(r.status, 200, r.text);
      SH.assertShape(r.body, { url: ['string'], expires_at: ['string'], ttl_seconds: ['integer'] });
      assert.equal(r.body.ttl_seconds, 300);
      const whole = await fetch(r.body.url);
      assert.equal(whole.status, 200);
      assert.equal(whole.headers.get('content-type'), 'audio/wav');
      assert.equal(whole.headers.get('accept-ranges'), 'bytes');
      assert.deepEqual(Buffer.from(await whole.arrayBuffer()), file);
      const part = await fetch(r.body.url, { headers: { range: 'bytes=10-19' } });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get('content-range'), `bytes 10-19/${file.length}`);
      assert.deepEqual(Buffer.from(await part.arrayBuffer()), file.subarray(10, 20));
      const tail = await fetch(r.body.url, { headers: { range: 'bytes=-4' } });
      assert.deepEqual(Buffer.from(await tail.arrayBuffer()), file.subarray(file.length - 4));
      const bad = await fetch(r.body.url, { headers: { range: `bytes=${file.length + 5}-` } });
      assert.equal(bad.status, 416);
      await bad.arrayBuffer();
      // The signature's first character changed (to one it is not: 'A' in place of an 'A' was no change, 1 run in 64).
      const tampered = r.body.url.replace(/sig=(.)/, (_: string, c: string) => `sig=${c === 'A' ? 'B' : 'A'}`);
      assert.notEqual(tampered, r.body.url);
      SH.assertError(await h.req('GET', tampered.slice(h.base.length)), 403, 'RECORDING_URL_INVALID');
    });

    it('an expired URL is refused', async () => {
      const r = await h.req('POST', '/api/recordings/download', { key: t.key, body: { uuid: recId, ttl_seconds: 1 } });
      await new Promise((res) => setTimeout(res, 2100));
      SH.assertError(await h.req('GET', r.body.url.slice(h.base.length)), 403, 'RECORDING_URL_EXPIRED');
    });

    it('delete soft-deletes: the recording leaves the list, download and media answer 404', async () => {
      const url = (await h.req('POST', '/api/recordings/download', { key: t.key, body: { uuid: recId } })).body.url;
      const r = await h.req('POST', '/api/recordings/delete', { key: t.key, body: { uuid: recId } });
      assert.equal(r.status, 200);
      SH.assertShape(r.body, SH.MESSAGE);
      assert.equal((await h.req('GET', '/api/recordings', { key: t.key })).body.length, 0);
      SH.assertError(await h.req('POST', '/api/recordings/download', { key: t.key, body: { uuid: recId } }), 404);
      SH.assertError(await h.req('GET', url.slice(h.base.length)), 404, 'RECORDING_NOT_FOUND');
      SH.assertError(await h.req('POST', '/api/recordings/delete', { key: t.key, body: { uuid: recId } }), 404);
      const row = await h.db('recordings').where({ id: recId }).first();
      assert.ok(row.deleted_at, 'the row is kept, marked deleted');
    });
  });

  describe('end-users and phone tokens', () => {
    it('create assigns extensions from 1001, 409 on a duplicate email; list, update, delete', async () => {
      const acct = await h.tenant('Users', 0);
      const a = await h.req('POST', '/api/users/create', {
        key: acct.key,
        body: { email: 'a@x.test', display_name: 'A' },
      });
      assert.equal(a.status, 201);
      SH.assertShape(a.body, SH.END_USER, SH.END_USER_BEYOND_SPEC);
      assert.equal(a.body.extension_number, '1001');
      assert.equal(a.body.registration_state, 'unregistered');
      const b = await h.req('POST', '/api/users/create', { key: acct.key, body: { email: 'b@x.test' } });
      assert.equal(b.body.extension_number, '1002');
      assert.equal(b.body.display_name, '');
      SH.assertError(
        await h.req('POST', '/api/users/create', { key: acct.key, body: { email: 'a@x.test' } }),
        409,
        'END_USER_EMAIL_TAKEN',
      );
      SH.assertError(await h.req('POST', '/api/users/create', { key: acct.key, body: { email: 'not-an-email' } }), 400);
      const list = await h.req('GET', '/api/users/', { key: acct.key });
      assert.equal(list.body.length, 2);
      for (const u of list.body) SH.assertShape(u, SH.END_USER, SH.END_USER_BEYOND_SPEC);
      const up = await h.req('POST', '/api/users/update', {
        key: acct.key,
        body: { uuid: a.body.uuid, is_active: false },
      });
      assert.equal(up.status, 200);
      assert.equal(up.body.is_active, false);
      assert.equal(up.body.display_name, 'A', 'unchanged');
      const up2 = await h.req('POST', '/api/users/update', {
        key: acct.key,
        body: { uuid: a.body.uuid, display_name: 'Alice', is_active: null },
      });
      assert.equal(up2.body.display_name, 'Alice');
      assert.equal(up2.body.is_active, false);
      const del = await h.req('POST', '/api/users/delete', { key: acct.key, body: { uuid: b.body.uuid } });
      assert.equal(del.status, 200);
      SH.assertShape(del.body, SH.MESSAGE);
      SH.assertError(await h.req('POST', '/api/users/delete', { key: acct.key, body: { uuid: b.body.uuid } }), 404);
      SH.assertError(await h.req('POST', '/api/users/update', { key: acct.key, body: { uuid: 'nope' } }), 404);
    });

    it('mint returns a token, the phone_token object and iceServers; revoke answers a message', async () => {
      const u = await h.req('POST', '/api/users/create', { key: t.key, body: { email: 'phone@x.test' } });
      const r = await h.req('POST', '/api/phone-tokens/mint', {
        key: t.key,
        body: { uuid: u.body.uuid, ttl_seconds: 600, max_concurrent: 2 },
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(Object.keys(r.body).sort(), ['iceServers', 'phone_token', 'token']);
      SH.assertShape(r.body.phone_token, SH.PHONE_TOKEN);
      assert.equal(r.body.phone_token.end_user, u.body.uuid);
      assert.equal(r.body.phone_token.extension_number, u.body.extension_number);
      assert.equal(r.body.phone_token.max_concurrent, 2);
      assert.equal(r.body.phone_token.is_valid, true);
      assert.equal(r.body.phone_token.revoked_at, null);
      assert.ok(Array.isArray(r.body.iceServers));
      const rv = await h.req('POST', '/api/phone-tokens/revoke', {
        key: t.key,
        body: { uuid: r.body.phone_token.uuid },
      });
      assert.equal(rv.status, 200);
      SH.assertShape(rv.body, SH.MESSAGE);
      SH.assertError(await h.req('POST', '/api/phone-tokens/revoke', { key: t.key, body: { uuid: 'nope' } }), 404);
      SH.assertError(await h.req('POST', '/api/phone-tokens/mint', { key: t.key, body: { uuid: 'nope' } }), 404);
      SH.assertError(
        await h.req('POST', '/api/phone-tokens/mint', {
          key: t.key,
          body: { uuid: u.body.uuid, ttl_seconds: 10_000_000 },
        }),
        400,
      );
    });
  });

  describe('account, webhooks, keys, wallet, stream', () => {
    it('account', async () => {
      const r = await h.req('GET', '/api/account/', { key: t.key });
      assert.equal(r.status, 200);
      SH.assertShape(r.body, SH.ACCOUNT);
      assert.equal(r.body.uuid, t.accountId);
      assert.match(r.body.wallet_balance, SH.MONEY);
      assert.equal(r.body.status, 'active');
      assert.match(r.body.sip_domain, /^[a-z][a-z0-9-]*\.[a-z0-9.-]+$/);
    });

    it('webhooks: get, and post with the partial-update rules', async () => {
      const acct = await h.tenant('Hooks', 0, '+254700000301');
      let r = await h.req('GET', '/api/account/webhooks', { key: acct.key });
      assert.equal(r.status, 200);
      SH.assertShape(r.body, SH.WEBHOOKS);
      assert.deepEqual(r.body, {
        endpoints: { voice_inbound: '', voice_outbound: '', status: '' },
        fallback_mode: 'drop',
        fallback_value: '',
        numbers: [],
      });
      r = await h.req('POST', '/api/account/webhooks', { key: acct.key, body: { url: 'https://h.test/in' } });
      assert.equal(r.body.endpoints.voice_inbound, 'https://h.test/in', 'purpose defaults to voice_inbound');
      r = await h.req('POST', '/api/account/webhooks', {
        key: acct.key,
        body: { purpose: 'status', url: 'https://h.test/st', fallback_mode: 'message', fallback_value: 'Sorry' },
      });
      assert.deepEqual(r.body.endpoints, {
        voice_inbound: 'https://h.test/in',
        voice_outbound: '',
        status: 'https://h.test/st',
      });
      assert.equal(r.body.fallback_mode, 'message');
      assert.equal(r.body.fallback_value, 'Sorry');
      r = await h.req('POST', '/api/account/webhooks', { key: acct.key, body: { purpose: 'status' } });
      assert.equal(r.body.endpoints.status, 'https://h.test/st', 'omitted url leaves it unchanged');
      assert.equal(r.body.fallback_mode, 'message', 'omitted fallback leaves it unchanged');
      r = await h.req('POST', '/api/account/webhooks', { key: acct.key, body: { purpose: 'status', url: '' } });
      assert.equal(r.body.endpoints.status, '', 'blank clears');
      const n = (await h.req('GET', '/api/numbers', { key: acct.key })).body[0];
      await h.req('POST', '/api/numbers/configure', {
        key: acct.key,
        body: { uuid: n.uuid, webhook_urls: { voice_outbound: 'https://h.test/out' } },
      });
      r = await h.req('GET', '/api/account/webhooks', { key: acct.key });
      assert.deepEqual(r.body.numbers, [
        { number: '+254700000301', purpose: 'voice_outbound', url: 'https://h.test/out' },
      ]);
      SH.assertError(await h.req('POST', '/api/account/webhooks', { key: acct.key, body: { purpose: 'sms' } }), 400);
      SH.assertError(await h.req('POST', '/api/account/webhooks', { key: acct.key, body: { url: 'not a url' } }), 400);
    });

    it('secret: get and rotate', async () => {
      const s = await h.req('GET', '/api/account/webhooks/secret', { key: t.key });
      assert.equal(s.status, 200);
      SH.assertShape(s.body, SH.SECRET);
      const r = await h.req('POST', '/api/account/webhooks/secret/rotate', { key: t.key });
      assert.equal(r.status, 200);
      SH.assertShape(r.body, SH.SECRET);
      assert.notEqual(r.body.signing_secret, s.body.signing_secret);
      assert.equal(
        (await h.req('GET', '/api/account/webhooks/secret', { key: t.key })).body.signing_secret,
        r.body.signing_secret,
      );
    });

    it('keys: list (never the secret), create (201, secret once), revoke', async () => {
      const c = await h.req('POST', '/api/keys/create', { key: t.key, body: { name: 'ci' } });
      assert.equal(c.status, 201);
      SH.assertShape(c.body, { ...SH.API_KEY, key: ['string'] });
      assert.ok(c.body.key.startsWith(c.body.prefix));
      const l = await h.req('GET', '/api/keys/', { key: c.body.key });
      assert.equal(l.status, 200);
      for (const k of l.body) SH.assertShape(k, SH.API_KEY);
      assert.ok(!l.text.includes(c.body.key), 'the secret is never listed');
      const used = l.body.find((k: any) => k.uuid === c.body.uuid);
      assert.match(used.last_used_at, SH.ISO, 'last use is recorded');
      SH.assertError(await h.req('POST', '/api/keys/create', { key: t.key, body: { name: '' } }), 400);
      SH.assertError(await h.req('POST', '/api/keys/revoke', { key: t.key, body: { uuid: 'nope' } }), 404);
    });

    it('wallet: balance and transactions newest first with bounds', async () => {
      const acct = await h.tenant('Wallet', 12_345);
      const b = await h.req('GET', '/api/wallet/balance', { key: acct.key });
      assert.equal(b.status, 200);
      assert.deepEqual(b.body, { balance: '123.45', currency: 'KES' });
      const tx = await h.req('GET', '/api/wallet/transactions/', { key: acct.key });
      assert.equal(tx.status, 200);
      assert.equal(tx.body.length, 1);
      SH.assertShape(tx.body[0], SH.TRANSACTION, SH.TRANSACTION_BEYOND_SPEC);
      assert.deepEqual(
        {
          direction: tx.body[0].direction,
          kind: tx.body[0].kind,
          amount: tx.body[0].amount,
          before: tx.body[0].balance_before,
        },
        { direction: 'credit', kind: 'topup', amount: '123.45', before: '0.00' },
      );
      SH.assertError(await h.req('GET', '/api/wallet/transactions?limit=0', { key: acct.key }), 400);
    });

    it('stream token: a single-use token and its ttl', async () => {
      const r = await h.req('POST', '/api/stream/token', { key: t.key });
      assert.equal(r.status, 200);
      SH.assertShape(r.body, SH.STREAM_TOKEN);
      assert.equal(r.body.ttl_seconds, h.config.tokens.streamTtlSeconds);
    });
  });

  describe('OpenAPI', () => {
    it('GET /api/openapi.json is OpenAPI 3.1, version 1.0, and describes every route the router serves', async () => {
      const r = await h.req('GET', '/api/openapi.json');
      assert.equal(r.status, 200);
      assert.match(r.body.openapi, /^3\.1\./);
      assert.equal(r.body.info.version, '1.0');
      const expected = [
        ['get', '/api/calls/'],
        ['post', '/api/calls/originate'],
        ['post', '/api/calls/hangup'],
        ['get', '/api/calls/hangup'],
        ['get', '/api/calls/hangup/{sid}'],
        ['get', '/api/calls/{uuid}'],
        ['get', '/api/numbers/'],
        ['get', '/api/numbers/available'],
        ['post', '/api/numbers/acquire'],
        ['post', '/api/numbers/release'],
        ['post', '/api/numbers/configure'],
        ['get', '/api/recordings/'],
        ['post', '/api/recordings/download'],
        ['post', '/api/recordings/delete'],
        ['post', '/api/phone-tokens/mint'],
        ['post', '/api/phone-tokens/revoke'],
        ['get', '/api/users/'],
        ['post', '/api/users/create'],
        ['post', '/api/users/update'],
        ['post', '/api/users/delete'],
        ['get', '/api/account/'],
        ['get', '/api/account/webhooks'],
        ['post', '/api/account/webhooks'],
        ['get', '/api/account/webhooks/secret'],
        ['post', '/api/account/webhooks/secret/rotate'],
        ['get', '/api/keys/'],
        ['post', '/api/keys/create'],
        ['post', '/api/keys/revoke'],
        ['get', '/api/wallet/balance'],
        ['get', '/api/wallet/transactions'],
        ['post', '/api/stream/token'],
        ['get', '/api/health/'],
      ];
      for (const [m, p] of expected) assert.ok(r.body.paths[p]?.[m], `${m} ${p} is described`);
      const limit = r.body.paths['/api/calls/'].get.parameters.find((p: any) => p.name === 'limit');
      assert.deepEqual([limit.schema.minimum, limit.schema.maximum, limit.schema.default], [1, 200, 50]);
      const orig = r.body.paths['/api/calls/originate'].post;
      assert.deepEqual(orig.requestBody.content['application/json'].schema.required.sort(), ['from', 'to', 'url']);
      assert.ok(orig.parameters.some((p: any) => p.name === 'Idempotency-Key'));
      assert.ok(orig.responses['201'] && orig.responses['429']);
    });
  });
});
