import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseMessage, SipRequest } from '../../../sip/stack/message/index.js';
import { validateRequest } from '../../../sip/stack/core/request-validator.js';
import { MANIFEST } from './rfc4475-manifest.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const dir = path.resolve(repoRoot, 'test', 'fixtures', 'rfc4475');

describe('RFC 4475 torture messages', () => {
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.dat'))
    .sort();

  it('the manifest names every one of the 49 messages', () => {
    assert.equal(files.length, 49);
    assert.deepEqual(files, Object.keys(MANIFEST).sort());
  });

  for (const [file, expected] of Object.entries(MANIFEST)) {
    it(`${file}: ${expected.kind}${'status' in expected ? ' ' + expected.status : ''}`, () => {
      const data = readFileSync(path.join(dir, file));
      const t0 = performance.now();
      const result = parseMessage(data);
      assert.ok(performance.now() - t0 < 50, 'parsed in under 50 ms');
      switch (expected.kind) {
        case 'parse':
        case 'tolerate':
          assert.ok(result.ok, result.ok ? '' : result.error.message);
          if (result.message instanceof SipRequest) assert.equal(validateRequest(result.message), null);
          break;
        case 'answer':
          assert.ok(result.ok && result.message instanceof SipRequest);
          assert.equal(validateRequest(result.message)?.status, expected.status);
          break;
        case 'reject':
          assert.ok(!result.ok, 'refused');
          assert.equal(result.error.status, expected.status);
          assert.ok(result.request, 'enough of the request is left to answer it');
          break;
        case 'drop':
          assert.ok(!result.ok, 'refused');
          assert.equal(result.request, undefined);
          break;
      }
    });
  }

  it('cparam01/02: a parameter after an addr-spec belongs to the header, inside <> to the URI', () => {
    const c1 = parseMessage(readFileSync(path.join(dir, 'application/cparam01.dat')));
    const c2 = parseMessage(readFileSync(path.join(dir, 'application/cparam02.dat')));
    assert.ok(c1.ok && c2.ok);
    const a1 = c1.message.contact!;
    const a2 = c2.message.contact!;
    assert.ok(a1.params.has('unknownparam'));
    assert.ok(!a2.params.has('unknownparam'));
    assert.ok('params' in a2.uri && a2.uri.params.has('unknownparam'));
  });

  it('dblreq: only the first request of the datagram is taken, per its Content-Length', () => {
    const r = parseMessage(readFileSync(path.join(dir, 'syntax-valid/dblreq.dat')));
    assert.ok(r.ok && r.message instanceof SipRequest);
    assert.equal(r.message.method, 'REGISTER');
    assert.equal(r.message.body.length, 0);
  });

  it('transports: five Via values are kept in order with their transports', () => {
    const r = parseMessage(readFileSync(path.join(dir, 'syntax-valid/transports.dat')));
    assert.ok(r.ok);
    assert.equal(r.message.headers.getAll('via').length, 5);
  });
});
