import { z } from 'zod';
import type { AssetRow } from '../store/index.js';

/** Shapes of the asset endpoints (docs/assets.md), kept beside schemas.ts for the OpenAPI document. */
const Uuid = z.string().min(1, 'expected a uuid').max(64);
export const AssetName = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,128}$/, 'expected 1 to 128 letters, digits, dots, dashes or underscores');

export const AssetListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(200),
  offset: z.coerce.number().int().min(0).default(0),
});
/** Raw uploads name the asset in the query; JSON uploads may put it in the body instead. */
export const AssetUploadQuery = z.object({ name: AssetName.optional() });
export const AssetUploadJson = z.strictObject({
  name: AssetName.optional(),
  /** The file's bytes, base64 (standard or URL-safe alphabet). */
  audio_base64: z.string().min(1, 'expected the audio as base64'),
});
export const AssetRenameBody = z.object({ uuid: Uuid, name: AssetName });
export const AssetUuidBody = z.object({ uuid: Uuid });

export const AssetOut = z.object({
  uuid: z.string(),
  name: z.string(),
  is_active: z.boolean(),
  duration_seconds: z.number(),
  size_bytes: z.number().int(),
  original_format: z.string(),
  media_format: z.enum(['wav']),
  storage_backend: z.enum(['local', 's3']),
  created_at: z.string(),
  updated_at: z.string(),
});

export const assetOut = (a: AssetRow): z.infer<typeof AssetOut> => ({
  uuid: a.id,
  name: a.name,
  is_active: a.is_active,
  duration_seconds: a.duration_seconds,
  size_bytes: a.size_bytes,
  original_format: a.original_format,
  media_format: 'wav',
  storage_backend: a.storage_backend,
  created_at: a.created_at,
  updated_at: a.updated_at,
});
