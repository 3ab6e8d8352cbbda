import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { sqliteDb } from '../support/db.js';
import { ApiHarness } from './harness.js';

interface RawReply {
  status: number;
  text: string;
  headers: http.IncomingHttpHeaders;
}

/** A GET with the path sent byte for byte (fetch would resolve `..` segments before sending). */
function get(base: string, path: string): Promise<RawReply> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method: 'GET', path }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString('utf8'), headers: res.headers }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const doc = (name: string): string => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');

/** Issue 15, item 10: the customer reference is served by the switch's HTTP API, public, and nothing else is. */
describe('GET /docs: the customer reference served by the API', function () {
  this.timeout(20_000);
  let h: ApiHarness;
  before(async () => {
    h = await ApiHarness.start(sqliteDb);
  });
  after(async () => h?.stop());

  it('lists every page of docs/ and links the OpenAPI document, without a key', async () => {
    for (const path of ['/docs', '/docs/']) {
      const r = await get(h.base, path);
      assert.equal(r.status, 200, path);
      assert.match(String(r.headers['content-type']), /^text\/html; charset=utf-8/);
      assert.match(r.text, /href="\/api\/openapi\.json"/);
      for (const name of ['api.md', 'events.md', 'webhooks.md', 'verbs.md', 'billing.md', 'security.md']) {
        assert.match(r.text, new RegExp(`href="/docs/${name.replace('.', '\\.')}"`), name);
      }
    }
    const openapi = await get(h.base, '/api/openapi.json');
    assert.equal(openapi.status, 200, 'the linked OpenAPI document is public too');
  });

  it('serves each page as Markdown, byte for byte the file of docs/', async () => {
    for (const name of ['api.md', 'events.md', 'webhooks.md', 'verbs.md']) {
      const r = await get(h.base, `/docs/${name}`);
      assert.equal(r.status, 200, name);
      assert.match(String(r.headers['content-type']), /^text\/markdown; charset=utf-8/, name);
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
      assert.equal(r.text, doc(name), name);
    }
    const events = await get(h.base, '/docs/events.md');
    for (const code of ['CALL.0300', 'END.0501', 'PLATFORM.0503', 'VERB.0299']) assert.ok(events.text.includes(code));
  });

  it('answers 404 to anything outside the allowlist: traversal, encoded slashes, other case, other files', async () => {
    for (const path of [
      '/docs/..%2fREADME.md',
      '/docs/..%2FREADME.md',
      '/docs/%2e%2e%2fpackage.json',
      '/docs/../package.json',
      '/docs/../README.md',
      '/docs/..%5cpackage.json',
      '/docs/API.md',
      '/Docs/api.md',
      '/docs/api',
      '/docs/screenshots',
      '/docs/architecture.md/',
      '/docs/api.md%00',
      '/docs/nope.md',
      '/docs/%2fetc%2fpasswd',
    ]) {
      const r = await get(h.base, path);
      if (path === '/docs/architecture.md/') {
        assert.equal(r.status, 200, 'a trailing slash is tolerated as on every path');
        continue;
      }
      assert.equal(r.status, 404, path);
      assert.doesNotMatch(r.text, /"name": "simu"|^# Simu/m, path);
    }
  });
});
