import { stat } from 'node:fs/promises';
import type { Db } from './db.js';
import { ConflictError, isUniqueViolation } from './errors.js';
import { newId, nowIso } from './ids.js';
import { firstRow, insertRows, runSqlCount, selectRows } from './fixed-sql.js';

/**
 * Account audio assets. The row is the truth about an asset; its audio is one 8 kHz mono 16-bit WAV at
 * `storage_path` (for the local backend, `<dataDir>/assets/<account>/<uuid>.wav`).
 */
export interface AssetRow {
  id: string;
  account_id: string;
  name: string;
  is_active: boolean;
  storage_backend: 'local' | 's3';
  storage_path: string;
  duration_seconds: number;
  size_bytes: number;
  /** What the upload was before conversion: wav, ogg, flac, mp3, aiff, au. */
  original_format: string;
  created_at: string;
  updated_at: string;
}

/** Names as the Play verb accepts them (verbs/parse.ts): letters, digits and `._-`, at most 128. */
export const ASSET_NAME = /^[A-Za-z0-9._-]{1,128}$/;

const normalise = (r: any): AssetRow => ({
  ...r,
  is_active: Boolean(r.is_active),
  duration_seconds: Number(r.duration_seconds),
  size_bytes: Number(r.size_bytes),
});

const nameTaken = (name: string) =>
  new ConflictError(`an asset named "${name}" already exists in this account`, 'ASSET_NAME_TAKEN');

export interface NewAsset {
  id?: string;
  account_id: string;
  name: string;
  storage_path: string;
  duration_seconds: number;
  size_bytes: number;
  original_format: string;
  storage_backend?: 'local' | 's3';
}

export async function insertAsset(db: Db, input: NewAsset): Promise<AssetRow> {
  const at = nowIso();
  const row = {
    id: input.id ?? newId(),
    storage_backend: 'local',
    ...input,
    is_active: true,
    created_at: at,
    updated_at: at,
  };
  try {
    await insertRows(db, 'assets', [row]);
  } catch (e) {
    if (isUniqueViolation(e)) throw nameTaken(input.name);
    throw e;
  }
  return normalise(await firstRow(db, 'select * from "assets" where "id" = ? limit 1', [row.id]));
}

export async function listAssets(
  db: Db,
  accountId: string,
  opts: { limit: number; offset: number } = { limit: 200, offset: 0 },
): Promise<AssetRow[]> {
  const rows = await selectRows(
    db,
    'select * from "assets" where "account_id" = ? order by "name" asc, "id" asc limit ? offset ?',
    [accountId, opts.limit, opts.offset],
  );
  return rows.map(normalise);
}

export async function findAsset(db: Db, accountId: string, id: string): Promise<AssetRow | undefined> {
  const r = await firstRow(db, 'select * from "assets" where "account_id" = ? and "id" = ? limit 1', [accountId, id]);
  return r ? normalise(r) : undefined;
}

const BY_NAME = 'select * from "assets" where "account_id" = ? and "name" = ? limit 1';

export async function findAssetByName(db: Db, accountId: string, name: string): Promise<AssetRow | undefined> {
  const r = await firstRow(db, BY_NAME, [accountId, name]);
  return r ? normalise(r) : undefined;
}

export async function renameAsset(db: Db, accountId: string, id: string, name: string): Promise<AssetRow | undefined> {
  try {
    const n = await runSqlCount(
      db,
      'update "assets" set "name" = ?, "updated_at" = ? where "account_id" = ? and "id" = ?',
      [name, nowIso(), accountId, id],
      { table: 'assets', columns: ['name', 'updated_at'] },
    );
    if (n === 0) return undefined;
  } catch (e) {
    if (isUniqueViolation(e)) throw nameTaken(name);
    throw e;
  }
  return findAsset(db, accountId, id);
}

export async function setAssetActive(
  db: Db,
  accountId: string,
  id: string,
  active: boolean,
): Promise<AssetRow | undefined> {
  const n = await runSqlCount(
    db,
    'update "assets" set "is_active" = ?, "updated_at" = ? where "account_id" = ? and "id" = ?',
    [active, nowIso(), accountId, id],
    { table: 'assets', columns: ['is_active', 'updated_at'] },
  );
  return n === 0 ? undefined : findAsset(db, accountId, id);
}

/** Removes the row and answers it, so the caller can remove the audio; undefined when there was none. */
export async function deleteAssetRow(db: Db, accountId: string, id: string): Promise<AssetRow | undefined> {
  const row = await findAsset(db, accountId, id);
  if (!row) return undefined;
  await runSqlCount(db, 'delete from "assets" where "account_id" = ? and "id" = ?', [accountId, id], 'assets');
  return row;
}

/** A non-local asset backend, as Play needs it: a local file to play for a stored object (media/media-storage.ts). */
export interface AssetAudioSource {
  readonly backend: string;
  localPath(storagePath: string): Promise<string | undefined>;
}

/**
 * The audio file `<Play asset="name">` plays, or undefined when the account has no such asset, it is inactive, or
 * its file is missing or empty (the Play verb then emits PLAY.0404 and the call goes on). An asset kept in another
 * backend (s3) is fetched to a local cache through `remote`.
 */
export async function findPlayableAsset(
  db: Db,
  accountId: string,
  name: string,
  remote?: AssetAudioSource,
): Promise<string | undefined> {
  const r = (await firstRow(db, BY_NAME, [accountId, name])) as
    { is_active: unknown; storage_path: string; storage_backend: string } | undefined;
  if (!r || !r.is_active) return undefined;
  let file: string | undefined = r.storage_path;
  if (r.storage_backend !== 'local') {
    if (!remote || remote.backend !== r.storage_backend) return undefined;
    file = await remote.localPath(r.storage_path).catch(() => undefined);
  }
  const st = file ? await stat(file).catch(() => undefined) : undefined;
  return st?.isFile() && st.size > 44 ? file : undefined;
}
