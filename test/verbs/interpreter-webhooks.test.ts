import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Interpreter,
  callControlFetcher,
  type CallControlCall,
  type VerbContext,
  type VerbEvent,
} from '../../verbs/index.js';
import { UrlPolicy } from '../../kit/index.js';

/** The account's server is on 127.0.0.1: the operator's opt-in to private destinations. */
const loopbackAllowed = new UrlPolicy({ allowPrivate: true });

/**
 * The interpreter wired to the real signed fetch against a real HTTP server: the account's server sees a first
 * request, a Dial action callback and a Record action callback, each signed, each with its extras, and the
 * document-set customPayload on the requests after the document that set it. Media is faked (this room does
 * not own it).
 */
describe('verbs/interpreter with real call-control webhooks', () => {
  const secret = 'whsec_integration';
  let server: Server;
  let base = '';
  const requests: Array<{ path: string; fields: Record<string, unknown>; signatureOk: boolean }> = [];

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        const url = `${base}${req.url ?? ''}`;
        const expected = createHmac('sha256', secret)
          .update(Buffer.concat([Buffer.from(url + String(req.headers['x-voice-timestamp'])), raw]))
          .digest('base64');
        const path = new URL(url).pathname;
        requests.push({
          path,
          fields: JSON.parse(raw.toString('utf8')) as Record<string, unknown>,
          signatureOk: expected === req.headers['x-voice-signature'],
        });
        const reply = (xml: string) => res.writeHead(200, { 'Content-Type': 'application/xml' }).end(xml);
        if (path === '/start') {
          reply(`<Response customPayload='{"ticket":7}'>
  <Say>Karibu</Say>
  <Dial action="${base}/after-dial?leg=1">+254711000002</Dial>
  <Say>never</Say>
</Response>`);
        } else if (path === '/after-dial') {
          reply(`<Response><Record action="${base}/after-record" maxLength="30"/><Say>never either</Say></Response>`);
        } else {
          res.writeHead(500).end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('runs start -> Dial action -> Record action -> fallback, every request signed with the right fields', async () => {
    let call: CallControlCall = {
      sid: 'call_int1',
      accountUuid: 'acc-9',
      direction: 'inbound',
      from: '+254722000003',
      to: '+254700000001',
    };
    const log: string[] = [];
    const events: VerbEvent[] = [];
    const ctx: VerbContext = {
      say: (text) => Promise.resolve(void log.push(`say:${text}`)),
      play: () => Promise.resolve('played'),
      dial: (target) => {
        log.push(
          `dial:${target.kind === 'number' ? target.number : target.kind === 'extension' ? target.extension : target.kind}`,
        );
        return Promise.resolve({ status: 'no-answer', durationSeconds: 0 });
      },
      record: (o) => {
        log.push(`record:${o.maxLength}`);
        return Promise.resolve({ durationSeconds: 4, path: 'recordings/acc-9/r1.wav' });
      },
      startSessionRecording: () => Promise.resolve(),
      pause: () => Promise.resolve(),
      gather: () => Promise.resolve({ digits: '', end: 'timeout' }),
      canReject: () => false,
      reject: () => Promise.resolve(),
      hangup: () => Promise.resolve(void log.push('hangup')),
      setCustomPayload: (payload) => {
        call = { ...call, customPayload: payload };
        return Promise.resolve();
      },
      fetchDocument: callControlFetcher({ call: () => call, secret, timeoutMs: 2000, urlPolicy: loopbackAllowed }),
      emit: (e) => void events.push(e),
      fallback: { mode: 'message', value: 'Samahani' },
    };

    const end = await new Interpreter(ctx).run({ url: `${base}/start?call=int1` });

    assert.equal(end.reason, 'fallback');
    assert.deepEqual(log, ['say:Karibu', 'dial:+254711000002', 'record:30', 'say:Samahani', 'hangup']);
    assert.deepEqual(
      requests.map((r) => [r.path, r.signatureOk]),
      [
        ['/start', true],
        ['/after-dial', true],
        ['/after-record', true],
      ],
    );
    const base6 = {
      AccountSid: 'acc-9',
      CallSid: 'call_int1',
      CallStatus: 'ringing',
      Direction: 'inbound',
      From: '+254722000003',
      To: '+254700000001',
    };
    assert.deepEqual(requests[0]!.fields, base6);
    assert.deepEqual(requests[1]!.fields, {
      ...base6,
      customPayload: '{"ticket":7}',
      DialCallStatus: 'no-answer',
      DialCallDuration: 0,
    });
    assert.deepEqual(requests[2]!.fields, {
      ...base6,
      customPayload: '{"ticket":7}',
      RecordingDuration: 4,
      RecordingPath: 'recordings/acc-9/r1.wav',
    });
    assert.deepEqual(events, [
      {
        code: 'WH.0400',
        event: 'webhook.failed',
        data: { url: `${base}/after-record`, reason: 'http_status', status: 500, fallback: 'message' },
      },
    ]);
  });
});
