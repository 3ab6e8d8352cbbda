import assert from 'node:assert/strict';
import http from 'node:http';
import { createGuardedFetch, requestUrl, UrlPolicy } from '../../kit/index.js';

/**
 * Issue 15, item 1: one signature rule. Every webhook is signed over requestUrl(url), which must be exactly what a
 * receiver rebuilds from the request it gets: `scheme://` + Host header + request target.
 */
describe('kit: requestUrl, the URL a webhook is requested and signed as', () => {
  it('normalises the spellings a customer may configure', () => {
    const cases: Array<[string, string]> = [
      ['https://Hooks.Example.com', 'https://hooks.example.com/'],
      ['HTTPS://HOOKS.example.COM/Voice', 'https://hooks.example.com/Voice'],
      ['http://h:80/x', 'http://h/x'],
      ['https://h:443/x', 'https://h/x'],
      ['http://h:8080/x', 'http://h:8080/x'],
      ['http://h/a%2Fb/c%2fd', 'http://h/a%2Fb/c%2fd'],
      ['http://h/caf\u00e9 menu?q=a b', 'http://h/caf%C3%A9%20menu?q=a%20b'],
      ['http://h/x?', 'http://h/x'],
      ['http://h/x?a=1#part', 'http://h/x?a=1'],
      ['http://user:pw@h/x', 'http://h/x'],
      ['http://b\u00fccher.example/x', 'http://xn--bcher-kva.example/x'],
      ['http://[::1]:8080/x', 'http://[::1]:8080/x'],
    ];
    for (const [given, wire] of cases) {
      assert.equal(requestUrl(given), wire, given);
      assert.equal(requestUrl(wire), wire, `idempotent: ${wire}`);
    }
    assert.equal(requestUrl('not a url'), 'not a url');
    assert.equal(requestUrl('ftp://h/x'), 'ftp://h/x');
  });

  describe('is what the guarded fetch sends (a real server rebuilds it)', () => {
    let server: http.Server;
    let port = 0;
    const seen: string[] = [];
    before(async () => {
      server = http.createServer((req, res) => {
        seen.push(`http://${req.headers.host}${req.url}`);
        res.end('ok');
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as { port: number }).port;
    });
    after(() => new Promise<void>((r) => server.close(() => r())));

    it('for every form, rebuilt URL === requestUrl(configured) === response.url', async () => {
      const f = createGuardedFetch({ policy: new UrlPolicy({ allowPrivate: true }) });
      const forms = [
        `HTTP://127.0.0.1:${port}`,
        `http://127.0.0.1:${port}/a%2Fb/caf\u00e9 x?q=1 2&r=%2F#frag`,
        `http://127.0.0.1:${port}/status?`,
        `http://u:p@127.0.0.1:${port}/x?y`,
      ];
      for (const configured of forms) {
        seen.length = 0;
        const res = await f(configured, { method: 'POST', body: '{}', redirect: 'manual' });
        await res.text();
        assert.equal(seen[0], requestUrl(configured), configured);
        assert.equal(res.url, requestUrl(configured));
      }
    });
  });
});
