/**
 * The customer reference served by the switch: `GET /docs` lists the pages of the docs/
 * folder and links the OpenAPI document; `GET /docs/<name>.md` answers one page as Markdown. Public, no key.
 *
 * The pages are read once, when the app is built, into an allowlist keyed by file name; a request only ever
 * looks its name up in that map (exact, case-sensitive), so no part of a request is joined to a filesystem path
 * and `..`, encoded slashes or another folder cannot name anything else.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Router } from '@koa/router';

/** The repository's docs/ folder. */
export const DOCS_DIR = path.join(import.meta.dirname, '..', 'docs');
/** A page name: lower-case letters, digits and dashes, `.md`; anything else in docs/ is not served. */
const PAGE_NAME = /^[a-z0-9][a-z0-9-]*\.md$/;
/** A page larger than this is not served (the folder is ours, but a stray file must not sit in memory). */
const MAX_PAGE_BYTES = 1024 * 1024;

export interface DocPage {
  readonly name: string;
  readonly title: string;
  readonly body: Buffer;
}

/** The servable pages of `dir`, sorted by name. */
export function loadDocPages(dir: string = DOCS_DIR): ReadonlyMap<string, DocPage> {
  const pages = new Map<string, DocPage>();
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => PAGE_NAME.test(n));
  } catch {
    return pages; // no docs/ folder in this installation: /docs lists nothing
  }
  for (const name of names.sort()) {
    const file = path.join(dir, name);
    const st = statSync(file);
    if (!st.isFile() || st.size > MAX_PAGE_BYTES) continue;
    const body = readFileSync(file);
    const heading = /^# (.+)$/m.exec(body.toString('utf8'));
    pages.set(name, { name, title: heading?.[1]?.trim() ?? name, body });
  }
  return pages;
}

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function indexHtml(pages: ReadonlyMap<string, DocPage>): string {
  const items = [...pages.values()].map(
    (p) => `<li><a href="/docs/${escapeHtml(p.name)}">${escapeHtml(p.name)}</a>: ${escapeHtml(p.title)}</li>`,
  );
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><title>Simu: customer reference</title></head><body>',
    '<h1>Simu: customer reference</h1>',
    '<p>The REST API: <a href="/api/openapi.json">/api/openapi.json</a> (OpenAPI 3.1). Events and reason codes:',
    '<a href="/docs/events.md">events.md</a>; webhooks: <a href="/docs/webhooks.md">webhooks.md</a>; verb',
    'documents: <a href="/docs/verbs.md">verbs.md</a>. Pages are Markdown.</p>',
    `<ul>\n${items.join('\n')}\n</ul>`,
    '</body></html>',
    '',
  ].join('\n');
}

/** Registers GET /docs and GET /docs/:name on a public router (paths are matched case-sensitively there). */
export function docsRoutes(router: Router, pages: ReadonlyMap<string, DocPage> = loadDocPages()): void {
  const index = indexHtml(pages);
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = index;
  });
  router.get('/docs/:name', (ctx) => {
    const page = pages.get(ctx.params.name ?? '');
    if (page === undefined) return; // left unanswered: the error middleware's 404 ROUTE_NOT_FOUND
    ctx.type = 'text/markdown; charset=utf-8';
    ctx.body = page.body;
  });
}
