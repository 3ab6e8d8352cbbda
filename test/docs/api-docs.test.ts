import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { BEYOND_SPEC_EVENT_CODES, eventFor, signWebhook } from '../../events/index.js';
import { requestUrl } from '../../kit/index.js';

const API_MD = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');

/** The value of a `- name: \`value\`` line of the worked example in docs/api.md. */
function field(name: string): string {
  const m = new RegExp(`^- ${name}: \`([^\`]+)\`$`, 'm').exec(API_MD);
  assert.ok(m, `docs/api.md has a "- ${name}: \`...\`" line`);
  return m[1]!;
}

/** Issue 15, item 1: the documented signature example is computed, so the page cannot drift from the code. */
describe('docs/api.md', () => {
  it('the webhook signature worked example is what the service computes and what an independent HMAC gives', () => {
    const configured = field('configured URL');
    const wire = field('request URL');
    const ts = field('timestamp');
    const body = field('body');
    const secret = field('secret');
    const signature = field('signature');
    assert.equal(requestUrl(configured), wire, 'the request URL rule');
    assert.equal(signWebhook(secret, configured, ts, body), signature, 'the service signs the configured URL so');
    const independent = createHmac('sha256', secret).update(`${wire}${ts}${body}`, 'utf8').digest('base64');
    assert.equal(independent, signature, 'a receiver with only the request it got computes the same');
  });

  it('lists every code beyond the spec with its event name', () => {
    for (const code of BEYOND_SPEC_EVENT_CODES) {
      assert.match(API_MD, new RegExp(`^\\| ${code.replace('.', '\\.')} \\| ${eventFor(code).event} \\|`, 'm'), code);
    }
  });
});
