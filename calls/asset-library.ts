import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AudioImportError, convertToPlaybackWav } from '../media/index.js';
import {
  ASSET_NAME,
  deleteAssetRow,
  findAsset,
  findAssetByName,
  insertAsset,
  listAssets,
  renameAsset,
  setAssetActive,
  type AssetRow,
  type Db,
} from '../store/index.js';
import { LocalMediaStorage } from './media-storage.js';

/** Largest upload accepted, before conversion (docs/assets.md). */
export const MAX_ASSET_BYTES = 10 * 1024 * 1024;

/** A refused asset operation, with the HTTP status and stable code the API answers. */
export class AssetError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'AssetError';
  }
}

const notFound = () => new AssetError(404, 'ASSET_NOT_FOUND', 'Asset not found.');

function checkName(name: string): void {
  if (!ASSET_NAME.test(name))
    throw new AssetError(400, 'ASSET_NAME_INVALID', 'An asset name is 1 to 128 letters, digits, dots, dashes or _.');
}

/**
 * An account's audio assets: upload (checked and converted once by sox to 8 kHz mono 16-bit WAV), list, rename,
 * activate/deactivate and delete. Used by the API (api/routes/assets.ts) and the operator CLI (cli/assets.ts).
 */
export class AssetLibrary {
  readonly #db: Db;
  readonly #storage: LocalMediaStorage;

  constructor(opts: { db: Db; dataDir: string }) {
    this.#db = opts.db;
    this.#storage = new LocalMediaStorage(opts.dataDir);
  }

  async upload(accountId: string, name: string, audio: Buffer): Promise<AssetRow> {
    checkName(name);
    if (audio.length === 0) throw new AssetError(400, 'ASSET_EMPTY', 'The upload is empty.');
    if (audio.length > MAX_ASSET_BYTES)
      throw new AssetError(413, 'ASSET_TOO_LARGE', `An asset upload is at most ${MAX_ASSET_BYTES} bytes.`);
    // Refuse a taken name before spending a conversion on it; the unique index still decides a race.
    if (await findAssetByName(this.#db, accountId, name))
      throw new AssetError(409, 'ASSET_NAME_TAKEN', `An asset named "${name}" already exists in this account.`);
    const id = randomUUID();
    const dest = this.#storage.pathFor(path.join('assets', accountId, `${id}.wav`));
    await mkdir(path.dirname(dest), { recursive: true });
    const src = `${dest}.upload`;
    try {
      await writeFile(src, audio);
      const converted = await convertToPlaybackWav(src, dest).catch((e: unknown) => {
        if (!(e instanceof AudioImportError)) throw e;
        if (e.reason === 'unsupported') throw new AssetError(415, 'ASSET_FORMAT_UNSUPPORTED', e.message);
        throw new AssetError(422, 'ASSET_UNDECODABLE', e.message);
      });
      return await insertAsset(this.#db, {
        id,
        account_id: accountId,
        name,
        storage_path: dest,
        duration_seconds: converted.durationSeconds,
        size_bytes: converted.sizeBytes,
        original_format: converted.format,
      });
    } catch (e) {
      await rm(dest, { force: true });
      throw e;
    } finally {
      await rm(src, { force: true });
    }
  }

  list(accountId: string, opts?: { limit: number; offset: number }): Promise<AssetRow[]> {
    return listAssets(this.#db, accountId, opts);
  }

  async get(accountId: string, id: string): Promise<AssetRow> {
    return (await findAsset(this.#db, accountId, id)) ?? Promise.reject(notFound());
  }

  /** By uuid or, failing that, by name (the CLI takes either). */
  async resolve(accountId: string, idOrName: string): Promise<AssetRow> {
    const row =
      (await findAsset(this.#db, accountId, idOrName)) ?? (await findAssetByName(this.#db, accountId, idOrName));
    if (!row) throw notFound();
    return row;
  }

  async rename(accountId: string, id: string, name: string): Promise<AssetRow> {
    checkName(name);
    return (await renameAsset(this.#db, accountId, id, name)) ?? Promise.reject(notFound());
  }

  async setActive(accountId: string, id: string, active: boolean): Promise<AssetRow> {
    return (await setAssetActive(this.#db, accountId, id, active)) ?? Promise.reject(notFound());
  }

  /** Deletes the row first (Play stops finding it at once), then its audio. */
  async delete(accountId: string, id: string): Promise<AssetRow> {
    const row = await deleteAssetRow(this.#db, accountId, id);
    if (!row) throw notFound();
    await this.#storage.remove(row.storage_path);
    return row;
  }
}
