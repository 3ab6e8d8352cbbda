import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import type { Db } from '../../store/index.js';
import { EventCodes, canonicalJson, verifyWebhookSignature, signWebhook } from '../../events/index.js';
import { Receiver, fileDb, seedAccount, seedCall, waitFor } from './helpers.js';
import { eventsOn } from './setup.js';

/**
 * The spec's words (Authentication 6): "base64 of HMAC-SHA256, keyed with the account's signing secret, over the
 * concatenation of the request URL, the timestamp string, and the raw body bytes exactly as sent". Written here
 * independently of events/signing.ts.
 */
function specSignature(secret: string, url: string, timestamp: string, raw: Buffer): string {
  const bytes = Buffer.concat([Buffer.from(url, 'utf8'), Buffer.from(timestamp, 'utf8'), raw]);
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(bytes).digest('base64');
}

/** "sorted keys and no extra whitespace", again written independently. */
function sortedNoSpace(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(sortedNoSpace).join(',')}]`;
  if (v && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedNoSpace((v as any)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

describe('events: webhook signing', () => {
  it('canonical JSON sorts keys at every depth and has no whitespace', () => {
    const v = { b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'é ☎' }, u: undefined };
    assert.equal(canonicalJson(v), '{"a":{"c":"é ☎","d":[3,{"y":2,"z":1}]},"b":1}');
    assert.equal(canonicalJson(v), sortedNoSpace({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'é ☎' } }));
  });

  it('canonical JSON sorts objects of one shape, and of the same keys in another order, alike', () => {
    const shapes = [
      { z: 1, b: 2, a: 3 },
      { z: 4, b: 5, a: 6 },
      { a: 7, z: 8, b: 9 },
      { z: 1, b: 2, a: 3, c: 0 },
      { z: 1, b: 2 },
    ];
    for (let round = 0; round < 20; round++) {
      for (const v of shapes) assert.equal(canonicalJson({ x: v, ...v }), sortedNoSpace({ x: v, ...v }));
    }
  });

  it('canonical JSON orders keys by code point: a prefix first, astral characters after U+E000..U+FFFF', () => {
    // By UTF-16 code unit '😀' (U+1F600, D83D DE00) would sort before '\uff01'; by code point it sorts after.
    const v = { '😀': 1, '\uff01': 2, ab: 3, a: 4, B: 5, 'a😀b': 6, 'a😁': 7, '\ue000x': 8 };
    assert.equal(canonicalJson(v), '{"B":5,"a":4,"ab":3,"a😀b":6,"a😁":7,"\ue000x":8,"！":2,"😀":1}');
  });

  it('signWebhook matches the spec formula on a non-ASCII body; verify rejects any change', () => {
    const raw = Buffer.from('{"name":"Wanjirū ☎"}', 'utf8');
    const url = 'https://example.test/cb?x=1&y=%C3%A9';
    const sig = signWebhook('s3cret', url, '1700000000', raw);
    assert.equal(sig, specSignature('s3cret', url, '1700000000', raw));
    assert.equal(signWebhook('s3cret', url, '1700000000', raw.toString('utf8')), sig);
    assert.ok(verifyWebhookSignature('s3cret', url, '1700000000', raw, sig));
    assert.ok(!verifyWebhookSignature('other', url, '1700000000', raw, sig));
    assert.ok(!verifyWebhookSignature('s3cret', url, '1700000001', raw, sig));
    assert.ok(!verifyWebhookSignature('s3cret', url.replace('x=1', 'x=2'), '1700000000', raw, sig));
  });

  describe('on a real delivery', () => {
    let db: Db;
    let receiver: Receiver;
    let ev: ReturnType<typeof eventsOn>;

    beforeEach(async () => {
      db = (await fileDb()).db;
      receiver = await new Receiver().start();
      ev = eventsOn(db);
    });
    afterEach(async () => {
      await ev.outbox.close();
      await receiver.close();
      await db.destroy();
    });

    it('a status callback with a query-string URL and a non-ASCII body verifies with the spec HMAC', async () => {
      const secret = 'whsec_test-secret-ü';
      const url = receiver.url('/hooks/status?acct=a%20b&tag=caf%C3%A9&x=1');
      const accountId = await seedAccount(db, url, secret);
      const call = await seedCall(db, accountId, {
        custom_payload: JSON.stringify({ name: 'Wanjirū ☎ café', z: 1, a: [2, 'ß'] }),
      });
      const sent = await ev.publisher.emit({ accountId, code: EventCodes.callInitiated, callId: call.id });
      assert.equal(sent.delivery, 'queued');
      await waitFor(() => receiver.delivered().length === 1, 5000, 'delivery');
      const r = receiver.requests[0]!;

      assert.equal(r.url, url, 'the request goes to the URL exactly as configured');
      const ts = String(r.headers['x-voice-timestamp']);
      assert.match(ts, /^\d+$/);
      assert.ok(Math.abs(Number(ts) - Date.now() / 1000) < 300, 'timestamp is current Unix seconds');
      assert.equal(r.headers['x-voice-signature'], specSignature(secret, url, ts, r.raw));
      assert.equal(r.headers['x-voice-event'], 'call.initiated');
      assert.equal(r.headers['content-type'], 'application/json');
      assert.ok(r.raw.includes(Buffer.from('Wanjirū ☎ café', 'utf8')), 'non-ASCII sent as UTF-8, not escaped');
      assert.equal(r.raw.toString('utf8'), sortedNoSpace(r.json), 'sorted keys, no whitespace');

      assert.deepEqual(Object.keys(r.json).sort(), [
        'accountId',
        'code',
        'createdAt',
        'customPayload',
        'data',
        'event',
        'id',
        'sid',
      ]);
      assert.equal(r.json.id, sent.id);
      assert.equal(r.json.accountId, accountId);
      assert.equal(r.json.code, 'CALL.0100');
      assert.equal(r.json.sid, call.sid);
      assert.deepEqual(r.json.customPayload, { name: 'Wanjirū ☎ café', z: 1, a: [2, 'ß'] });
      for (const f of [
        'sid',
        'direction',
        'from_number',
        'to_number',
        'status',
        'reason_code',
        'duration_seconds',
        'talk_seconds',
        'started_at',
        'answered_at',
        'ended_at',
      ]) {
        assert.ok(f in r.json.data, `snapshot field ${f}`);
      }
      assert.equal(r.json.data.to_number, '+254700000002');
    });

    it('a URL configured with a space and non-ASCII is signed in the form it is requested', async () => {
      const configured = receiver.url('/hooks/statüs?name=a b&tag=café');
      const accountId = await seedAccount(db, configured, 'k');
      await ev.publisher.emit({ accountId, code: EventCodes.walletLow });
      await waitFor(() => receiver.delivered().length === 1, 5000, 'delivery');
      const r = receiver.requests[0]!;
      assert.equal(r.url, receiver.url('/hooks/stat%C3%BCs?name=a%20b&tag=caf%C3%A9'));
      const ts = String(r.headers['x-voice-timestamp']);
      assert.equal(r.headers['x-voice-signature'], specSignature('k', r.url, ts, r.raw));
    });

    it('a rotated secret signs the very next attempt; the old one no longer verifies', async () => {
      const url = receiver.url('/rot');
      const accountId = await seedAccount(db, url, 'old-secret');
      receiver.reply = async () => {
        if (receiver.requests.length === 0) {
          await db('accounts').where({ id: accountId }).update({ signing_secret: 'new-secret' });
          return 500;
        }
        return 200;
      };
      await ev.publisher.emit({ accountId, code: EventCodes.walletLow, data: { remaining: '1.00' } });
      await waitFor(() => receiver.delivered().length === 1, 5000, 'delivery after a retry');
      const [first, second] = receiver.requests;
      const sig = (r: typeof first) => [
        String(r!.headers['x-voice-timestamp']),
        String(r!.headers['x-voice-signature']),
      ];
      const [ts1, s1] = sig(first);
      const [ts2, s2] = sig(second);
      assert.equal(s1, specSignature('old-secret', url, ts1!, first!.raw));
      assert.equal(s2, specSignature('new-secret', url, ts2!, second!.raw));
      assert.notEqual(s2, specSignature('old-secret', url, ts2!, second!.raw));
      assert.deepEqual(first!.raw, second!.raw, 'same bytes, same id on the retry');
    });
  });
});
