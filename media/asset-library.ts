import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AudioImportError, convertToPlaybackWav } from './asset-import.js';
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
import { LocalMediaStorage, type MediaStorage } from './media-storage.js';

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
 * activate/deactivate and delete. Used by the API (api/routes/assets.ts) and the operator CLI (cli/commands/assets.ts).
 */
export class AssetLibrary {
  readonly #db: Db;
  /** The data directory: conversion happens here, and `local` assets stay here. */
  readonly #local: LocalMediaStorage;
  /** Where new uploads are kept (local, or s3 from the configuration: mediaStorageFor). */
  readonly #storage: MediaStorage;

  constructor(opts: { db: Db; dataDir: string; storage?: MediaStorage }) {
    this.#db = opts.db;
    this.#local = new LocalMediaStorage(opts.dataDir);
    this.#storage = opts.storage ?? this.#local;
  }

  /** The audio of a stored asset, as Play needs it (store/assets.ts findPlayableAsset). */
  get audioSource(): MediaStorage {
    return this.#storage;
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
    const key = `assets/${accountId}/${id}.wav`;
    const dest = this.#local.pathFor(key);
    await mkdir(path.dirname(dest), { recursive: true });
    const src = `${dest}.upload`;
    let storagePath: string | undefined;
    try {
      await writeFile(src, audio);
      const converted = await convertToPlaybackWav(src, dest).catch((e: unknown) => {
        if (!(e instanceof AudioImportError)) throw e;
        if (e.reason === 'unsupported') throw new AssetError(415, 'ASSET_FORMAT_UNSUPPORTED', e.message);
        throw new AssetError(422, 'ASSET_UNDECODABLE', e.message);
      });
      storagePath = await this.#storage.put(key, dest);
      if (this.#storage.backend !== 'local') await rm(dest, { force: true }); // the backend caches its own copy
      return await insertAsset(this.#db, {
        id,
        account_id: accountId,
        name,
        storage_backend: this.#storage.backend,
        storage_path: storagePath,
        duration_seconds: converted.durationSeconds,
        size_bytes: converted.sizeBytes,
        original_format: converted.format,
      });
    } catch (e) {
      await rm(dest, { force: true });
      if (storagePath && this.#storage.backend !== 'local')
        await this.#storage.remove(storagePath).catch(() => undefined);
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
    await (row.storage_backend === 'local' ? this.#local : this.#storage).remove(row.storage_path);
    return row;
  }
}
