import type { Context } from 'koa';
import { z } from 'zod';
import { AssetLibrary, MAX_ASSET_BYTES, mediaStorageFor } from '../../media/index.js';
import * as A from '../asset-schemas.js';
import { authOf } from '../auth.js';
import { ApiError, ValidationError } from '../errors.js';
import type { RouteDeps, RouteTable } from '../route-table.js';
import * as S from '../schemas.js';
import { parseBody, parseQuery, parseWith } from '../validation.js';

/** base64 grows 4/3; a little room for the JSON around it. */
const MAX_JSON_UPLOAD_BYTES = Math.ceil((MAX_ASSET_BYTES * 4) / 3) + 4096;

async function readBytes(ctx: Context, limit: number): Promise<Buffer> {
  const declared = Number(ctx.get('content-length'));
  const tooLarge = () =>
    new ApiError(413, 'ASSET_TOO_LARGE', `An asset upload is at most ${MAX_ASSET_BYTES} bytes of audio.`);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * An upload is either the file itself (`Content-Type: audio/*` or `application/octet-stream`, name in `?name=`)
 * or JSON `{ name, audio_base64 }`. Only this route reads bodies this large; every other route keeps the 64 KiB
 * JSON limit of validation.ts.
 */
async function readUpload(ctx: Context): Promise<{ name: string; audio: Buffer }> {
  const q = parseQuery(ctx, A.AssetUploadQuery);
  const type = ctx.get('content-type').toLowerCase();
  let name = q.name;
  let audio: Buffer;
  if (/^application\/(.+\+)?json\b/.test(type)) {
    const text = (await readBytes(ctx, MAX_JSON_UPLOAD_BYTES)).toString('utf8');
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (e) {
      throw new ApiError(400, 'MALFORMED_JSON', `The request body is not valid JSON: ${(e as Error).message}`);
    }
    const body = parseWith(A.AssetUploadJson, raw, 'body');
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(body.audio_base64.replace(/\s+/g, '')))
      throw new ValidationError('Invalid request body: the field "audio_base64" is not base64.');
    audio = Buffer.from(body.audio_base64, body.audio_base64.includes('-') ? 'base64url' : 'base64');
    if (audio.length > MAX_ASSET_BYTES)
      throw new ApiError(413, 'ASSET_TOO_LARGE', `An asset upload is at most ${MAX_ASSET_BYTES} bytes of audio.`);
    name = body.name ?? name;
  } else if (/^audio\/|^application\/octet-stream\b/.test(type)) {
    audio = await readBytes(ctx, MAX_ASSET_BYTES);
  } else {
    throw new ApiError(
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      'Send the audio file with Content-Type audio/* (name in ?name=) or JSON {"name", "audio_base64"}.',
    );
  }
  if (!name) throw new ValidationError('Invalid request: the asset "name" is required (query or JSON body).');
  return { name, audio };
}

/** Account audio assets, played by `<Play asset="name">` (docs/assets.md). */
export function assetRoutes(t: RouteTable, d: RouteDeps): void {
  const library = new AssetLibrary({ db: d.db, dataDir: d.config.dataDir, storage: mediaStorageFor(d.config) });

  t.add(
    {
      method: 'get',
      path: '/api/assets',
      summary: 'Audio assets of the account, by name (active and inactive)',
      query: A.AssetListQuery,
      ok: { status: 200, schema: z.array(A.AssetOut) },
      errors: [400, 401],
    },
    async (ctx) => {
      const q = parseQuery(ctx, A.AssetListQuery);
      ctx.body = (await library.list(authOf(ctx).account.id, q)).map(A.assetOut);
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/assets/upload',
      summary:
        'Upload audio (WAV, Ogg Vorbis, FLAC, AIFF, AU; MP3 where the server sox reads it), at most 10 MiB: the ' +
        'raw file with Content-Type audio/* and ?name=, or JSON {name, audio_base64}. Converted once to 8 kHz mono WAV.',
      query: A.AssetUploadQuery,
      body: A.AssetUploadJson,
      ok: { status: 201, schema: A.AssetOut },
      errors: [400, 401, 409, 413, 415, 422],
    },
    async (ctx) => {
      const { name, audio } = await readUpload(ctx);
      ctx.status = 201;
      ctx.body = A.assetOut(await library.upload(authOf(ctx).account.id, name, audio));
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/assets/rename',
      summary: 'Rename an asset (the new name must be free in the account)',
      body: A.AssetRenameBody,
      ok: { status: 200, schema: A.AssetOut },
      errors: [400, 401, 404, 409],
    },
    async (ctx) => {
      const body = await parseBody(ctx, A.AssetRenameBody);
      ctx.body = A.assetOut(await library.rename(authOf(ctx).account.id, body.uuid, body.name));
    },
  );

  for (const [verb, active] of [
    ['deactivate', false],
    ['activate', true],
  ] as const) {
    t.add(
      {
        method: 'post',
        path: `/api/assets/${verb}`,
        summary: active
          ? 'Activate an asset: Play plays it again'
          : 'Deactivate an asset: Play answers PLAY.0404 and goes on; the audio is kept',
        body: A.AssetUuidBody,
        ok: { status: 200, schema: A.AssetOut },
        errors: [400, 401, 404],
      },
      async (ctx) => {
        const body = await parseBody(ctx, A.AssetUuidBody);
        ctx.body = A.assetOut(await library.setActive(authOf(ctx).account.id, body.uuid, active));
      },
    );
  }

  t.add(
    {
      method: 'post',
      path: '/api/assets/delete',
      summary: 'Delete an asset and its audio',
      body: A.AssetUuidBody,
      ok: { status: 200, schema: S.MessageOut },
      errors: [400, 401, 404],
    },
    async (ctx) => {
      const body = await parseBody(ctx, A.AssetUuidBody);
      await library.delete(authOf(ctx).account.id, body.uuid);
      ctx.body = { message: 'The asset was deleted.' };
    },
  );
}
