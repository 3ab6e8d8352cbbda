import assert from 'node:assert/strict';
import dns from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  OutboundUrlError,
  ReplyTooLargeError,
  UrlPolicy,
  createGuardedFetch,
  guardedRequest,
} from '../../kit/index.js';

/** A real HTTP server on `host`, answering with `handler`; counts the requests it got. */
async function serve(host: string, handler: http.RequestListener) {
  let hits = 0;
  let connections = 0;
  const server = http.createServer((req, res) => {
    hits++;
    handler(req, res);
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path = '/') => `http://${host}:${port}${path}`,
    port,
    hits: () => hits,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

async function refusal(p: Promise<unknown>): Promise<OutboundUrlError> {
  const err = await p.then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof OutboundUrlError, String(err));
  return err;
}

describe('kit: guarded fetch (issue 22, SSRF)', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of closers.splice(0)) await c();
  });

  it('a name resolving to 127.0.0.1 (localhost) is refused before any connection when private is not allowed', async () => {
    const s = await serve('127.0.0.1', (_q, r) => r.end('secret'));
    closers.push(s.close);
    const strict = createGuardedFetch({ policy: new UrlPolicy() });
    const err = await refusal(strict(`http://localhost:${s.port}/`));
    assert.equal(err.code, 'URL_FORBIDDEN');
    assert.equal(s.hits(), 0);
    const open = createGuardedFetch({ policy: new UrlPolicy({ allowPrivate: true }) });
    assert.equal(await (await open(`http://localhost:${s.port}/`)).text(), 'secret');
  });

  it('numeric spellings of 127.0.0.1 are refused (http://2130706433/, http://0x7f.1/)', async () => {
    const s = await serve('127.0.0.1', (_q, r) => r.end('x'));
    closers.push(s.close);
    const strict = createGuardedFetch({ policy: new UrlPolicy() });
    for (const host of ['2130706433', '0x7f.1', '0177.0.0.1', '[::ffff:127.0.0.1]']) {
      assert.equal((await refusal(strict(`http://${host}:${s.port}/`))).code, 'URL_FORBIDDEN', host);
    }
    assert.equal(s.hits(), 0);
  });

  it('a redirect from an allowed server to a refused address is refused at that hop', async () => {
    // Policy: 127.0.0.2 stands for a public host, 127.0.0.1 for the private one behind it.
    const inside = await serve('127.0.0.1', (_q, r) => r.end('metadata'));
    closers.push(inside.close);
    const outside = await serve('127.0.0.2', (_q, r) => r.writeHead(302, { location: inside.url('/latest') }).end());
    closers.push(outside.close);
    const fetchOut = createGuardedFetch({ policy: new UrlPolicy({ allowPrivate: true, deny: ['127.0.0.1'] }) });
    const err = await refusal(fetchOut(outside.url('/audio.wav')));
    assert.equal(err.code, 'URL_FORBIDDEN');
    assert.equal(outside.hits(), 1);
    assert.equal(inside.hits(), 0, 'the private server was never reached');
    // redirect: 'manual' hands the 3xx back without following it.
    const manual = await fetchOut(outside.url('/x'), { redirect: 'manual' });
    assert.equal(manual.status, 302);
  });

  it('allowed redirects are followed hop by hop up to the limit; POST becomes GET on 303', async () => {
    let seen = '';
    const s = await serve('127.0.0.1', (q, r) => {
      const n = Number(q.url?.slice(1) || '0');
      if (n < 3) return void r.writeHead(n === 0 ? 303 : 307, { location: `/${n + 1}` }).end();
      seen = q.method ?? '';
      r.end('end');
    });
    closers.push(s.close);
    const fetchOut = createGuardedFetch({ policy: new UrlPolicy({ allowPrivate: true }), maxRedirects: 3 });
    const res = await fetchOut(s.url('/0'), { method: 'POST', body: 'x' });
    assert.equal(await res.text(), 'end');
    assert.equal(seen, 'GET');
    const short = createGuardedFetch({ policy: new UrlPolicy({ allowPrivate: true }), maxRedirects: 2 });
    assert.equal((await refusal(short(s.url('/0')))).code, 'URL_TOO_MANY_REDIRECTS');
  });

  it('a refused address reads the same whether its port is open, closed or silent; only http(s) schemes', async () => {
    const open = await serve('127.0.0.1', (_q, r) => r.end('x'));
    closers.push(open.close);
    const silent = await serve('127.0.0.1', () => undefined);
    closers.push(silent.close);
    const strict = createGuardedFetch({ policy: new UrlPolicy() });
    const errors = await Promise.all(
      ['http://127.0.0.1:1/', open.url(), silent.url(), 'http://169.254.169.254/latest/meta-data/'].map((u) =>
        refusal(strict(u)),
      ),
    );
    assert.deepEqual(new Set(errors.map((e) => `${e.code}: ${e.message}`)).size, 1);
    assert.doesNotMatch(errors[0]!.message, /ECONNREFUSED|timeout|169\.254|127\.0/);
    assert.equal(open.hits() + silent.hits(), 0);
    assert.equal((await refusal(strict('file:///etc/passwd'))).code, 'URL_INVALID');
    assert.equal((await refusal(strict('gopher://example.com/'))).code, 'URL_INVALID');
  });

  it("the caller's signal aborts a hanging exchange with its reason, as fetch does", async () => {
    const s = await serve('127.0.0.1', () => undefined); // never answers
    closers.push(s.close);
    const fetchOut = createGuardedFetch({ policy: new UrlPolicy({ allowPrivate: true }) });
    const t0 = Date.now();
    const err = (await fetchOut(s.url(), { signal: AbortSignal.timeout(200) }).catch((e) => e)) as Error;
    assert.equal(err.name, 'TimeoutError');
    assert.ok(Date.now() - t0 < 2000);
  });

  it('keeps connections alive only to the address just checked: reused while allowed, never past a refusal', async () => {
    const s = await serve('127.0.0.1', (_q, r) => r.end('ok'));
    closers.push(s.close);
    const open = createGuardedFetch({ policy: new UrlPolicy({ allowPrivate: true }) });
    for (let i = 0; i < 3; i++) assert.equal(await (await open(s.url(`/${i}`))).text(), 'ok');
    assert.equal(s.connections(), 1, 'three requests over one kept-alive connection');
    // The same URL under a policy that refuses the address: the pooled connection is not used.
    const strict = createGuardedFetch({ policy: new UrlPolicy() });
    assert.equal((await refusal(strict(s.url('/again')))).code, 'URL_FORBIDDEN');
    assert.equal(s.hits(), 3);
  });

  it('sends the headers given as fetch would: names in lower case, values trimmed, same names joined; bad ones refused', async () => {
    let got: http.IncomingHttpHeaders = {};
    const s = await serve('127.0.0.1', (q, r) => ((got = q.headers), r.end('ok')));
    closers.push(s.close);
    const open = createGuardedFetch({ policy: new UrlPolicy({ allowPrivate: true }) });
    await open(s.url(), { method: 'POST', body: 'x', headers: { 'X-Simu-Signature': ' t=1,v1=ab ', Accept: 'a/b' } });
    assert.equal(got['x-simu-signature'], 't=1,v1=ab');
    assert.equal(got.accept, 'a/b');
    await open(s.url(), { headers: { 'X-Twice': 'one', 'x-twice': 'two' } });
    assert.equal(got['x-twice'], 'one, two');
    await open(s.url(), { headers: new Headers([['X-From-Headers', 'yes']]) });
    assert.equal(got['x-from-headers'], 'yes');
    await assert.rejects(open(s.url(), { headers: { 'Bad Name': 'v' } }), TypeError);
    await assert.rejects(open(s.url(), { headers: { 'X-Split': 'a\r\nInjected: 1' } }), TypeError);
    assert.equal(s.hits(), 3, 'a refused header sends nothing');
  });

  describe('guardedRequest (the reply read whole, for webhooks and status callbacks)', () => {
    const open = new UrlPolicy({ allowPrivate: true });
    const signal = () => AbortSignal.timeout(5000);

    it('answers status, headers by any case and the whole body, over one kept-alive connection; checked as fetch is', async () => {
      const s = await serve('127.0.0.1', (q, r) => {
        let body = '';
        q.on('data', (c) => (body += c)).on('end', () => {
          r.setHeader('Cache-Control', 'no-store');
          r.setHeader('X-Twice', ['a', 'b']);
          r.writeHead(201).end(`got ${q.method} ${body} ${q.headers['x-sig']}`);
        });
      });
      closers.push(s.close);
      for (let i = 0; i < 3; i++) {
        const reply = await guardedRequest(
          s.url(`/${i}`),
          { method: 'post', headers: { 'X-Sig': 'v1' }, body: `n${i}`, signal: signal(), maxBytes: 1000 },
          open,
        );
        assert.equal(reply.status, 201);
        assert.equal(reply.body.toString(), `got POST n${i} v1`);
        assert.equal(reply.headers.get('CACHE-control'), 'no-store');
        assert.equal(reply.headers.get('x-twice'), 'a, b');
        assert.equal(reply.headers.get('x-none'), null);
        assert.equal(reply.url, s.url(`/${i}`));
      }
      assert.equal(s.connections(), 1, 'three requests over one connection');
      const strict = guardedRequest(s.url('/x'), { signal: signal(), maxBytes: 1000 }, new UrlPolicy());
      assert.equal((await refusal(strict)).code, 'URL_FORBIDDEN');
      await assert.rejects(
        guardedRequest(s.url(), { headers: { 'X-Split': 'a\r\nInjected: 1' }, signal: signal(), maxBytes: 9 }, open),
        TypeError,
      );
      assert.equal(s.hits(), 3, 'neither the refused address nor a bad header sent anything');
    });

    it('a body over maxBytes is refused with the status; a dropped body keeps the connection unless it is too long', async () => {
      const s = await serve('127.0.0.1', (q, r) =>
        r.writeHead(q.url === '/big' ? 500 : 200).end('x'.repeat(q.url === '/big' ? 5000 : 10)),
      );
      closers.push(s.close);
      const err = await guardedRequest(s.url('/big'), { signal: signal(), maxBytes: 100 }, open).catch((e) => e);
      assert.ok(err instanceof ReplyTooLargeError, String(err));
      assert.equal(err.status, 500);
      const before = s.connections();
      for (const path of ['/small', '/small']) {
        const reply = await guardedRequest(s.url(path), { signal: signal(), maxBytes: 100, dropBody: true }, open);
        assert.equal(reply.status, 200);
        assert.equal(reply.body.length, 0);
      }
      assert.equal(s.connections(), before + 1, 'dropped small bodies: one connection for both');
      const big = await guardedRequest(s.url('/big'), { signal: signal(), maxBytes: 100, dropBody: true }, open);
      assert.equal(big.status, 500, 'a dropped body that is too long still answers its status');
    });

    it("the caller's signal aborts a reply whose body never ends, with the signal's reason", async () => {
      const s = await serve('127.0.0.1', (_q, r) => r.writeHead(200).write('partial'));
      closers.push(s.close);
      const t0 = Date.now();
      const err = (await guardedRequest(s.url(), { signal: AbortSignal.timeout(200), maxBytes: 100 }, open).catch(
        (e) => e,
      )) as Error;
      assert.equal(err.name, 'TimeoutError');
      assert.ok(Date.now() - t0 < 2000);
    });
  });

  describe('what one request costs: a host name looked up once a second, a deadline without a signal', () => {
    const open = new UrlPolicy({ allowPrivate: true, deny: ['127.0.0.2'] });
    const realLookup = dns.promises.lookup;
    let answer = '127.0.0.1';
    let lookups = 0;
    before(() => {
      // Names under `.test` resolve to `answer`; the module's own import sees the replacement.
      dns.promises.lookup = (async (host: string, options: dns.LookupAllOptions) => {
        if (!host.endsWith('.test')) return realLookup(host, options);
        lookups++;
        return [{ address: answer, family: 4 }];
      }) as typeof dns.promises.lookup;
      syncBuiltinESMExports();
    });
    beforeEach(() => (answer = '127.0.0.1'));
    after(() => {
      dns.promises.lookup = realLookup;
      syncBuiltinESMExports();
    });

    it("reuses a name's answer for a second, checks it on every request, and follows a change to a refused address", async () => {
      const s = await serve('127.0.0.1', (_q, r) => r.end('ok'));
      closers.push(s.close);
      const url = `http://hooks.test:${s.port}/status`;
      lookups = 0;
      for (let i = 0; i < 3; i++) {
        const reply = await guardedRequest(url, { timeoutMs: 5000, maxBytes: 100 }, open);
        assert.equal(reply.body.toString(), 'ok');
      }
      assert.equal(lookups, 1, 'one lookup for three requests within a second');
      // The kept answer is checked against each request's policy: a strict one refuses it without connecting.
      const strict = guardedRequest(url, { timeoutMs: 5000, maxBytes: 100 }, new UrlPolicy());
      assert.equal((await refusal(strict)).code, 'URL_FORBIDDEN');
      assert.equal(s.hits(), 3);
      // The name now points at a refused address: within a second it is looked up again and refused.
      answer = '127.0.0.2';
      await new Promise((r) => setTimeout(r, 1100));
      const moved = guardedRequest(url, { timeoutMs: 5000, maxBytes: 100 }, open);
      assert.equal((await refusal(moved)).code, 'URL_FORBIDDEN');
      assert.equal(lookups, 2);
      assert.equal(s.hits(), 3, 'the kept-alive connection to the old address carried nothing');
    });

    it('a timeoutMs ends a reply that never comes with TimeoutError, without any signal', async () => {
      const s = await serve('127.0.0.1', () => undefined); // never answers
      closers.push(s.close);
      const t0 = Date.now();
      const err = (await guardedRequest(s.url(), { timeoutMs: 200, maxBytes: 100 }, open).catch((e) => e)) as Error;
      assert.equal(err.name, 'TimeoutError', String(err));
      assert.ok(Date.now() - t0 < 2000, `ended after ${Date.now() - t0} ms`);
    });

    it("sends the URL's host as Host and its user:password@ as Basic authorization, unless one is given", async () => {
      let got: http.IncomingHttpHeaders = {};
      const s = await serve('127.0.0.1', (q, r) => ((got = q.headers), r.end('ok')));
      closers.push(s.close);
      await guardedRequest(`http://us%40er:p%3Ass@user.test:${s.port}/x`, { timeoutMs: 5000, maxBytes: 100 }, open);
      assert.equal(got.host, `user.test:${s.port}`);
      assert.equal(got.authorization, `Basic ${Buffer.from('us@er:p:ss').toString('base64')}`);
      const given = { authorization: 'Bearer t' };
      await guardedRequest(`http://u:p@127.0.0.1:${s.port}/x`, { headers: given, timeoutMs: 5000, maxBytes: 9 }, open);
      assert.equal(got.authorization, 'Bearer t');
      assert.equal(got.host, `127.0.0.1:${s.port}`);
    });
  });
});
