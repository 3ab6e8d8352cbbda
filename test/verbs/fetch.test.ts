import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  WebhookFetchError,
  buildCallControlFields,
  fetchVerbDocument,
  type CallControlCall,
  type WebhookFailureReason,
} from '../../verbs/index.js';
import { UrlPolicy } from '../../kit/index.js';

/** The test servers listen on 127.0.0.1: the operator's opt-in to private destinations (webhooks.allowPrivate). */
const urlPolicy = new UrlPolicy({ allowPrivate: true });

const SECRET = 'whsec_fetch_test';
const NOW_MS = Date.UTC(2026, 10, 22, 5, 0, 0);

interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

const outbound: CallControlCall = {
  sid: 'call_out1',
  accountUuid: 'acc-1',
  direction: 'outbound',
  from: '+254700000001',
  to: '+254711000002',
  customPayload: { order: { id: 42, note: 'Chai ☕ na maandazi' }, agent: 'Wanjiru' },
  endUser: { uuid: 'eu-1', email: 'w@example.com', display_name: 'Wanjiru K', extension_number: '1001' },
};

describe('verbs/fetch: buildCallControlFields', () => {
  it('inbound: the six base fields, CallStatus ringing, nothing optional', () => {
    const fields = buildCallControlFields({
      sid: 'call_in1',
      accountUuid: 'acc-1',
      direction: 'inbound',
      from: '+254722000003',
      to: '+254700000001',
      customPayload: null,
    });
    assert.deepEqual(fields, {
      CallSid: 'call_in1',
      AccountSid: 'acc-1',
      Direction: 'inbound',
      From: '+254722000003',
      To: '+254700000001',
      CallStatus: 'ringing',
    });
  });

  it('a call with a machine detection verdict carries AnsweredBy and MachineDetectionDuration; one without, neither', () => {
    const base = { sid: 'c', accountUuid: 'a', direction: 'outbound', from: '+1', to: '+2' } as const;
    const fields = buildCallControlFields({
      ...base,
      answeredBy: 'machine_end_beep',
      machineDetectionDurationMs: 7120,
    });
    assert.equal(fields.AnsweredBy, 'machine_end_beep');
    assert.equal(fields.MachineDetectionDuration, 7120);
    const none = buildCallControlFields({ ...base, answeredBy: null });
    assert.equal('AnsweredBy' in none || 'MachineDetectionDuration' in none, false);
  });

  it('outbound from an end-user: in-progress, customPayload as a JSON string, endUser object', () => {
    const fields = buildCallControlFields({ ...outbound, endUser: { ...outbound.endUser!, extra: 'x' } as never });
    assert.equal(fields.CallStatus, 'in-progress');
    assert.equal(typeof fields.customPayload, 'string');
    assert.deepEqual(JSON.parse(fields.customPayload!), outbound.customPayload);
    assert.deepEqual(fields.endUser, outbound.endUser);
  });

  it('action callbacks add exactly the extras given', () => {
    const dial = buildCallControlFields(outbound, { DialCallStatus: 'no-answer', DialCallDuration: 0 });
    assert.equal(dial.DialCallStatus, 'no-answer');
    assert.equal(dial.DialCallDuration, 0);
    assert.ok(!('RecordingPath' in dial));
    const rec = buildCallControlFields(outbound, { RecordingDuration: 12, RecordingPath: 'rec/abc.wav' });
    assert.deepEqual([rec.RecordingDuration, rec.RecordingPath], [12, 'rec/abc.wav']);
  });
});

describe('verbs/fetch: fetchVerbDocument against a real HTTP server', () => {
  let server: Server;
  let base = '';
  const received: Received[] = [];
  const slowResponses = new Set<ServerResponse>();

  const routes: Record<string, (res: ServerResponse) => void> = {
    '/ok': (res) => {
      res.writeHead(200, { 'Content-Type': 'application/xml' });
      res.end('<?xml version="1.0"?><Response><Say>Karibu</Say><Hangup/></Response>');
    },
    '/500': (res) => {
      res.writeHead(500);
      res.end('<Response><Say>not this</Say></Response>');
    },
    '/201': (res) => {
      res.writeHead(201, { 'Content-Type': 'application/xml' });
      res.end('<Response><Hangup/></Response>');
    },
    '/302': (res) => {
      res.writeHead(302, { Location: '/ok' });
      res.end();
    },
    '/slow': (res) => {
      slowResponses.add(res);
      setTimeout(() => routes['/ok']!(res), 1500).unref();
    },
    '/slow-body': (res) => {
      slowResponses.add(res);
      res.writeHead(200, { 'Content-Type': 'application/xml' });
      res.write('<Response>');
    },
    '/bad-xml': (res) => {
      res.writeHead(200);
      res.end('<Response><Say>unclosed</Response>');
    },
    '/bad-doc': (res) => {
      res.writeHead(200);
      res.end('<Response><Pay/></Response>');
    },
    '/huge': (res) => {
      res.writeHead(200);
      res.end(`<Response>${'<Pause/>'.repeat(10_000)}</Response>`);
    },
  };

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = new URL(req.url ?? '/', 'http://x').pathname;
        received.push({ path, headers: req.headers, body: Buffer.concat(chunks) });
        (routes[path] ?? ((r: ServerResponse) => r.writeHead(404).end()))(res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    for (const res of slowResponses) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  beforeEach(() => {
    received.length = 0;
  });

  function fetchFrom(path: string, timeoutMs = 2000) {
    return fetchVerbDocument({
      url: `${base}${path}`,
      fields: buildCallControlFields(outbound),
      secret: SECRET,
      timeoutMs,
      clock: { now: () => NOW_MS },
      urlPolicy,
    });
  }

  async function failure(path: string, reason: WebhookFailureReason, timeoutMs?: number): Promise<WebhookFetchError> {
    try {
      await fetchFrom(path, timeoutMs);
    } catch (err) {
      assert.ok(err instanceof WebhookFetchError, String(err));
      assert.equal(err.code, 'WEBHOOK_FETCH_FAILED');
      assert.equal(err.reason, reason, err.message);
      return err;
    }
    assert.fail(`${path} did not fail`);
  }

  it('200 with a valid document: parsed verbs come back', async () => {
    const doc = await fetchFrom('/ok?call=1&lang=sw');
    assert.deepEqual(
      doc.verbs.map((v) => v.verb),
      ['Say', 'Hangup'],
    );
  });

  it('the request is a signed JSON POST the receiver can verify from the spec alone', async () => {
    const url = `${base}/ok?call=1&lang=sw`;
    await fetchFrom('/ok?call=1&lang=sw');
    const [req] = received;
    assert.ok(req);
    assert.equal(req.headers['content-type'], 'application/json');
    assert.equal(req.headers['x-voice-timestamp'], String(NOW_MS / 1000));
    const expected = createHmac('sha256', SECRET)
      .update(Buffer.concat([Buffer.from(url + String(req.headers['x-voice-timestamp'])), req.body]))
      .digest();
    const given = Buffer.from(String(req.headers['x-voice-signature']), 'base64');
    assert.ok(given.length === expected.length && timingSafeEqual(given, expected), 'signature does not verify');
  });

  it('the body has sorted keys at every depth, no whitespace, and customPayload as a JSON string', async () => {
    await fetchFrom('/ok');
    const text = received[0]!.body.toString('utf8');
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const sortedDeep = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(sortedDeep)
        : v !== null && typeof v === 'object'
          ? Object.fromEntries(
              Object.keys(v)
                .sort()
                .map((k) => [k, sortedDeep((v as Record<string, unknown>)[k])]),
            )
          : v;
    assert.equal(text, JSON.stringify(sortedDeep(parsed)));
    assert.deepEqual(Object.keys(parsed), [
      'AccountSid',
      'CallSid',
      'CallStatus',
      'Direction',
      'From',
      'To',
      'customPayload',
      'endUser',
    ]);
    assert.equal(typeof parsed.customPayload, 'string');
    assert.deepEqual(JSON.parse(parsed.customPayload as string), outbound.customPayload);
    assert.match(text, /Chai ☕ na maandazi/); // UTF-8 on the wire, inside the payload string
  });

  it('HTTP 500 -> http_status', async () => {
    const err = await failure('/500', 'http_status');
    assert.equal(err.status, 500);
  });

  it('HTTP 201 with a valid document is still http_status: the spec asks for exactly 200', async () => {
    assert.equal((await failure('/201', 'http_status')).status, 201);
  });

  it('HTTP 302 -> http_status, and the redirect is not followed', async () => {
    const err = await failure('/302', 'http_status');
    assert.equal(err.status, 302);
    assert.deepEqual(
      received.map((r) => r.path),
      ['/302'],
    );
  });

  it('no reply within timeoutMs -> timeout, promptly', async () => {
    const started = performance.now();
    await failure('/slow', 'timeout', 200);
    const elapsed = performance.now() - started;
    assert.ok(elapsed >= 190 && elapsed < 1000, `took ${elapsed.toFixed(0)} ms`);
  });

  it("the caller's signal aborts the request with reason aborted, not timeout", async () => {
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 50);
    const started = performance.now();
    await assert.rejects(
      fetchVerbDocument({
        url: `${base}/slow`,
        fields: buildCallControlFields(outbound),
        secret: SECRET,
        timeoutMs: 2000,
        signal: abort.signal,
        urlPolicy,
      }),
      (err: unknown) => err instanceof WebhookFetchError && err.reason === 'aborted',
    );
    assert.ok(performance.now() - started < 1000);
  });

  it('headers in time but the body never finishes -> timeout', async () => {
    await failure('/slow-body', 'timeout', 200);
  });

  it('invalid XML -> invalid_document, with the parser message', async () => {
    const err = await failure('/bad-xml', 'invalid_document');
    assert.match(err.message, /not well-formed XML/);
  });

  it('a valid XML that is not a valid verb document -> invalid_document naming the line', async () => {
    const err = await failure('/bad-doc', 'invalid_document');
    assert.match(err.message, /line 1: Element 'Pay'/);
  });

  it('a reply over the size limit -> invalid_document', async () => {
    const err = await failure('/huge', 'invalid_document');
    assert.match(err.message, /more than 65536 bytes/);
  });

  it('without the opt-in, a call-control URL on loopback is refused before any request: network, no detail', async () => {
    for (const url of [`${base}/ok`, `http://localhost:${new URL(base).port}/ok`, 'http://169.254.169.254/']) {
      await assert.rejects(
        fetchVerbDocument({ url, fields: buildCallControlFields(outbound), secret: SECRET, timeoutMs: 2000 }),
        (err: unknown) =>
          err instanceof WebhookFetchError && err.reason === 'network' && /URL_FORBIDDEN/.test(err.message),
        url,
      );
    }
    assert.equal(received.length, 0, 'the loopback server was never asked');
  });

  it('nobody listening -> network', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    try {
      await fetchVerbDocument({
        url: `http://127.0.0.1:${port}/`,
        fields: buildCallControlFields(outbound),
        secret: SECRET,
        urlPolicy,
      });
      assert.fail('did not fail');
    } catch (err) {
      assert.ok(err instanceof WebhookFetchError);
      assert.equal(err.reason, 'network');
      assert.match(err.message, /ECONNREFUSED/);
    }
  });
});
