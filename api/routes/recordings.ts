import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { findRecording, findRecordingForMedia, listRecordings, softDeleteRecording } from '../../store/index.js';
import { authOf } from '../auth.js';
import { ApiError, notFound } from '../errors.js';
import { recordingOut } from '../present.js';
import type { RouteDeps, RouteTable } from '../route-table.js';
import * as S from '../schemas.js';
import { checkRecordingSignature, signRecordingUrl } from '../signing.js';
import { parseBody, parseQuery } from '../validation.js';

/** One `bytes=` range (RFC 9110 §14.1.2); several ranges are answered with the whole file, as §14.2 allows. */
export function parseRange(header: string, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== '' && Number(m[2]) < start) return null;
  }
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

export function recordingRoutes(t: RouteTable, d: RouteDeps): void {
  const recordingsDir = path.resolve(d.config.dataDir, 'recordings');

  t.add(
    {
      method: 'get',
      path: '/api/recordings',
      summary: 'Recordings of the account, newest first (deleted ones are not listed)',
      query: S.RecordingListQuery,
      ok: { status: 200, schema: z.array(S.RecordingOut) },
      errors: [400, 401],
    },
    async (ctx) => {
      const q = parseQuery(ctx, S.RecordingListQuery);
      const rows = await listRecordings(d.db, authOf(ctx).account.id, {
        callId: q.call_uuid,
        endUserId: q.end_user_uuid,
        limit: q.limit,
        offset: q.offset,
      });
      ctx.body = rows.map(recordingOut);
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/recordings/download',
      summary: 'A time-limited download URL for a recording (404 when unknown or deleted)',
      body: S.RecordingDownloadBody,
      ok: { status: 200, schema: S.RecordingDownloadOut },
      errors: [400, 401, 404],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.RecordingDownloadBody);
      const rec = await findRecording(d.db, authOf(ctx).account.id, body.uuid);
      if (!rec || rec.media_deleted_at) throw notFound('Recording', 'RECORDING_NOT_FOUND');
      const exp = Math.floor(Date.now() / 1000) + body.ttl_seconds;
      ctx.body = {
        url: signRecordingUrl(d.config.publicBaseUrl, d.signUrlSecret, rec.id, exp),
        expires_at: new Date(exp * 1000).toISOString(),
        ttl_seconds: body.ttl_seconds,
      };
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/recordings/delete',
      summary: 'Soft-delete a recording',
      body: S.UuidBody,
      ok: { status: 200, schema: S.MessageOut },
      errors: [400, 401, 404],
    },
    async (ctx) => {
      const body = await parseBody(ctx, S.UuidBody);
      const accountId = authOf(ctx).account.id;
      const rec = await findRecording(d.db, accountId, body.uuid);
      if (!rec || !(await softDeleteRecording(d.db, accountId, body.uuid)))
        throw notFound('Recording', 'RECORDING_NOT_FOUND');
      // A voicemail message: the end-user's phones' message-waiting lamps follow.
      if (rec.end_user_id) d.calls.mailboxChanged?.(accountId, rec.end_user_id);
      ctx.body = { message: 'The recording was deleted.' };
    },
  );

  t.add(
    {
      method: 'get',
      path: '/api/recordings/media/:uuid',
      summary: 'Recording audio through a signed URL (no API key; supports Range)',
      auth: false,
      query: z.object({ exp: z.string(), sig: z.string() }),
      ok: { status: 200, contentType: 'audio/wav', description: 'WAV audio (206 for a Range request)' },
      errors: [403, 404, 416],
    },
    async (ctx) => {
      const uuid = String(ctx.params.uuid);
      const exp = typeof ctx.query.exp === 'string' ? ctx.query.exp : undefined;
      const sig = typeof ctx.query.sig === 'string' ? ctx.query.sig : undefined;
      const verdict = checkRecordingSignature(d.signUrlSecret, uuid, exp, sig, Math.floor(Date.now() / 1000));
      if (verdict === 'bad') throw new ApiError(403, 'RECORDING_URL_INVALID', 'The download URL signature is invalid.');
      if (verdict === 'expired') throw new ApiError(403, 'RECORDING_URL_EXPIRED', 'The download URL has expired.');
      const rec = await findRecordingForMedia(d.db, uuid);
      if (!rec || !rec.storage_path) throw notFound('Recording', 'RECORDING_NOT_FOUND');
      const file = path.resolve(rec.storage_path);
      if (!file.startsWith(recordingsDir + path.sep)) throw notFound('Recording', 'RECORDING_NOT_FOUND');
      const st = await stat(file).catch(() => undefined);
      if (!st?.isFile()) throw notFound('Recording audio', 'RECORDING_MEDIA_MISSING');
      ctx.set('Accept-Ranges', 'bytes');
      ctx.set('Cache-Control', 'private, no-store');
      ctx.type = 'audio/wav';
      const range = ctx.get('range') ? parseRange(ctx.get('range'), st.size) : null;
      if (range === 'unsatisfiable') {
        ctx.set('Content-Range', `bytes */${st.size}`);
        throw new ApiError(416, 'RANGE_NOT_SATISFIABLE', 'The requested range is outside the recording.', {
          'Content-Range': `bytes */${st.size}`,
        });
      }
      if (range) {
        ctx.status = 206;
        ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${st.size}`);
        ctx.length = range.end - range.start + 1;
        ctx.body = createReadStream(file, { start: range.start, end: range.end });
      } else {
        ctx.status = 200;
        ctx.length = st.size;
        ctx.body = createReadStream(file);
      }
    },
  );
}
