import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import libxmljs from 'libxmljs2';
import { VerbDocumentError, parseVerbDocument } from '../../verbs/index.js';
import { SAFE_PARSER_OPTIONS } from '../../verbs/parse.js';

/** Nine levels of ten: 10^9 'a's if anything expanded it. */
function billionLaughs(): string {
  const levels = ['<!ENTITY l0 "aaaaaaaaaa">'];
  for (let i = 1; i <= 9; i++) levels.push(`<!ENTITY l${i} "${`&l${i - 1};`.repeat(10)}">`);
  return `<?xml version="1.0"?>\n<!DOCTYPE Response [${levels.join('')}]>\n<Response><Say>&l9;</Say></Response>`;
}

function refusal(xml: string): VerbDocumentError {
  try {
    parseVerbDocument(xml);
  } catch (err) {
    assert.ok(err instanceof VerbDocumentError);
    return err;
  }
  assert.fail('document was accepted');
}

describe('verbs/parse: entity expansion and network access are off (XXE)', () => {
  let server: Server;
  let requests = 0;
  let base = '';

  before(async () => {
    server = createServer((_req, res) => {
      requests += 1;
      res.writeHead(200, { 'Content-Type': 'application/xml-dtd' });
      res.end('<!ENTITY leak "LEAKED-FROM-SERVER">');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('an external entity naming a local file is refused and its content never appears', () => {
    const err = refusal(
      '<?xml version="1.0"?>\n<!DOCTYPE Response [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<Response><Say>&x;</Say></Response>',
    );
    assert.match(err.message, /line 2: DOCTYPE and entity declarations are not allowed/);
    assert.doesNotMatch(err.message, /root:/);
  });

  it('an external DTD and a parameter entity over http are refused and never fetched', () => {
    refusal(`<!DOCTYPE Response SYSTEM "${base}/evil.dtd"><Response><Say>&leak;</Say></Response>`);
    refusal(`<!DOCTYPE Response [<!ENTITY % p SYSTEM "${base}/evil.dtd"> %p;]><Response><Say>&leak;</Say></Response>`);
    assert.equal(requests, 0);
  });

  it('a billion-laughs document is refused in well under 100 ms', () => {
    const started = performance.now();
    const err = refusal(billionLaughs());
    const elapsed = performance.now() - started;
    assert.match(err.message, /DOCTYPE and entity declarations are not allowed/);
    assert.ok(elapsed < 100, `took ${elapsed.toFixed(1)} ms`);
  });

  it('an XInclude is just an unknown element', () => {
    const err = refusal(
      '<Response xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="file:///etc/passwd" parse="text"/></Response>',
    );
    assert.match(err.message, /include.*This element is not expected/);
  });

  // The second wall: even if the DOCTYPE screen were removed, libxml with our options neither reads files,
  // nor fetches DTDs, nor expands entity bombs.
  it('libxml with SAFE_PARSER_OPTIONS does not substitute a file entity (and the check can tell)', () => {
    const xml = '<!DOCTYPE Response [<!ENTITY x SYSTEM "file:///etc/passwd">]><Response><Say>&x;</Say></Response>';
    assert.match(libxmljs.parseXml(xml, { noent: true }).root()?.text() ?? '', /root:/);
    assert.equal(libxmljs.parseXml(xml, SAFE_PARSER_OPTIONS).root()?.text(), '');
  });

  it('libxml with SAFE_PARSER_OPTIONS does not load an external DTD (and the check can tell)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'simu-verbs-xxe-'));
    try {
      const dtd = join(dir, 'evil.dtd');
      writeFileSync(dtd, '<!ENTITY leak "LEAKED">');
      const xml = `<!DOCTYPE Response SYSTEM "file://${dtd}"><Response><Say>&leak;</Say></Response>`;
      // Control: with loading and substitution switched on, this libxml does read the file.
      assert.equal(libxmljs.parseXml(xml, { dtdload: true, noent: true }).root()?.text(), 'LEAKED');
      assert.equal(libxmljs.parseXml(xml, SAFE_PARSER_OPTIONS).root()?.text(), '');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('libxml with SAFE_PARSER_OPTIONS refuses a billion-laughs bomb quickly', () => {
    const started = performance.now();
    assert.throws(() => libxmljs.parseXml(billionLaughs(), SAFE_PARSER_OPTIONS), /entity/i);
    assert.ok(performance.now() - started < 500);
  });
});
