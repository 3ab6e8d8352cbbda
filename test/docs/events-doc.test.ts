import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { withGeneratedCodes } from '../../cli/codes-doc.js';
import { EVENT_CATALOGUE, REASON_LABELS, isStatusCallbackCode, type EventCode } from '../../events/index.js';

const EVENTS_MD = readFileSync(new URL('../../docs/events.md', import.meta.url), 'utf8');

/** Issue 15, item 10: the customer reference of codes is the catalogue's, so the page cannot drift from the code. */
describe('docs/events.md', () => {
  it('holds exactly what `bin/simu docs codes` generates from events/catalogue.ts', () => {
    assert.equal(EVENTS_MD, withGeneratedCodes(EVENTS_MD), 'docs/events.md is stale: run `bin/simu docs codes`');
  });

  it('has a row for every event code (with its status-callback column) and every reason code', () => {
    for (const code of Object.keys(EVENT_CATALOGUE) as EventCode[]) {
      const cb = isStatusCallbackCode(code) ? 'yes' : 'no';
      const row = `| ${code} | ${EVENT_CATALOGUE[code].event} | ${cb} |`;
      assert.ok(EVENTS_MD.includes(row), `${code} row`);
    }
    for (const [code, label] of Object.entries(REASON_LABELS)) {
      assert.ok(EVENTS_MD.includes(`| ${code} | ${label} |`), `${code} reason row`);
    }
  });

  it('points nowhere outside the repository, nor do the README and the other pages of docs/', () => {
    const root = new URL('../../', import.meta.url);
    const pages = ['README.md', ...readdirSync(new URL('docs/', root)).filter((n) => n.endsWith('.md')).map((n) => `docs/${n}`)];
    for (const page of pages) {
      assert.doesNotMatch(readFileSync(new URL(page, root), 'utf8'), /shared\/spec|\]\(\.\.\/|`\.\.\//, page);
    }
  });
});
