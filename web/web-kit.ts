import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Context } from 'koa';

/** An error a portal or console endpoint answers with: status, stable code, message. */
export class WebError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A JSON object body of at most 64 KiB (hostile input: bounded before it is parsed). */
export async function readJsonBody(ctx: Context): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of ctx.req) {
    size += (c as Buffer).length;
    if (size > 64 * 1024) throw new WebError(413, 'PAYLOAD_TOO_LARGE', 'Body too large.');
    chunks.push(c as Buffer);
  }
  try {
    const v = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    throw new WebError(400, 'VALIDATION_ERROR', 'The body is not JSON.');
  }
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

const requireHere = createRequire(import.meta.url);

/**
 * Browser libraries, served from node_modules under `vendor/`: nothing is fetched from outside the box. uPlot
 * (charts) ships single files; SIP.js (the softphone) ships ES modules without dependencies, so its lib/ folder is
 * served as it is and the browser imports it natively, no bundler.
 */
const VENDOR_FILES: Record<string, string> = {
  'uplot.js': vendorPath('uplot', 'dist/uPlot.iife.min.js'),
  'uplot.css': vendorPath('uplot', 'dist/uPlot.min.css'),
};
const VENDOR_DIRS: Record<string, string> = {
  'sip.js': vendorPath('sip.js', 'lib'),
};

/** The file a request path under `vendor/` names (`uplot.js`, `sip.js/index.js`), or null. */
export function vendorFile(rel: string): string | null {
  if (Object.hasOwn(VENDOR_FILES, rel)) return VENDOR_FILES[rel]!;
  const [lib, ...rest] = rel.split('/');
  if (!lib || !Object.hasOwn(VENDOR_DIRS, lib) || !rel.endsWith('.js')) return null;
  return confined(VENDOR_DIRS[lib]!, rest.join('/'));
}

/** A file of an npm package, found as Node finds the package (from the source tree or from dist/ alike). */
function vendorPath(pkg: string, file: string): string {
  return path.join(path.dirname(requireHere.resolve(`${pkg}/package.json`)), file);
}

/** Sends `file` (already confined to its directory by the caller) with the pages' security headers. */
export async function sendStatic(ctx: Context, file: string): Promise<void> {
  let body: Buffer;
  let modified: Date;
  try {
    [body, modified] = await Promise.all([readFile(file), stat(file).then((s) => s.mtime)]);
  } catch {
    ctx.status = 404;
    return;
  }
  ctx.type = TYPES[path.extname(file)] ?? 'application/octet-stream';
  // Revalidated on every load (no-cache), answered 304 when unchanged: the softphone's library is some 190 modules.
  ctx.set('Cache-Control', 'no-cache');
  ctx.etag = `W/"${body.length.toString(16)}-${modified.getTime().toString(16)}"`;
  ctx.lastModified = modified;
  ctx.status = 200;
  if (ctx.fresh) ctx.status = 304;
  else ctx.body = body;
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('X-Frame-Options', 'SAMEORIGIN');
  ctx.set(
    'Content-Security-Policy',
    "default-src 'self'; connect-src 'self' ws: wss:; media-src 'self' blob:; img-src 'self' data:; " +
      "object-src 'none'; base-uri 'none'; frame-ancestors 'self'; form-action 'self'",
  );
}

/** A file under `dir` named by a request path, or null when the path leaves it. */
export function confined(dir: string, rel: string): string | null {
  const file = path.normalize(path.join(dir, rel));
  return file.startsWith(dir + path.sep) ? file : null;
}
