import { copyFile, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type Config } from '../config/index.js';
import { S3Client, type S3Options } from './s3-client.js';

export type StorageBackendName = 'local' | 's3';

/**
 * Where audio the platform keeps lives (assets today; recordings are written locally by the media room). rtpengine
 * plays files on this host, so every backend answers a local path to play: `local` is the file itself, `s3` keeps
 * the object in a bucket and a local cache under `<dataDir>/s3-cache/`.
 */
export interface MediaStorage {
  readonly backend: StorageBackendName;
  /** Stores the file at `from` under `key` (`assets/<account>/<uuid>.wav`); answers the row's `storage_path`. */
  put(key: string, from: string): Promise<string>;
  /** A local file to play for a stored path, or undefined when its audio is gone. */
  localPath(storagePath: string): Promise<string | undefined>;
  /** Removes the audio; removing what is already gone is not an error. */
  remove(storagePath: string): Promise<void>;
}

/** Files under the data directory; `storage_path` is the absolute path. */
export class LocalMediaStorage implements MediaStorage {
  readonly backend = 'local' as const;
  readonly #root: string;

  constructor(dataDir: string) {
    this.#root = path.resolve(dataDir);
  }

  /** A path this storage may touch: inside the data directory, never a path a row was made to point elsewhere. */
  #inside(p: string): string | undefined {
    const abs = path.resolve(p);
    return abs.startsWith(this.#root + path.sep) ? abs : undefined;
  }

  pathFor(key: string): string {
    const abs = this.#inside(path.join(this.#root, key));
    if (!abs) throw new Error(`storage key outside the data directory: ${key}`);
    return abs;
  }

  async put(key: string, from: string): Promise<string> {
    const dest = this.pathFor(key);
    if (path.resolve(from) !== dest) {
      await mkdir(path.dirname(dest), { recursive: true });
      await copyFile(from, dest);
    }
    return dest;
  }

  async localPath(storagePath: string): Promise<string | undefined> {
    const abs = this.#inside(storagePath);
    if (!abs) return undefined;
    const st = await stat(abs).catch(() => undefined);
    return st?.isFile() ? abs : undefined;
  }

  async remove(storagePath: string): Promise<void> {
    const abs = this.#inside(storagePath);
    if (abs) await rm(abs, { force: true });
  }
}

/**
 * Objects in an S3-compatible bucket (`storage_path` is the object key), with a local cache to play from: the
 * uploaded file is cached at once, a cold cache is filled by one GET.
 */
export class S3MediaStorage implements MediaStorage {
  readonly backend = 's3' as const;
  readonly #s3: S3Client;
  readonly #cache: LocalMediaStorage;
  readonly #fetching = new Map<string, Promise<string | undefined>>();

  constructor(dataDir: string, s3: S3Options | S3Client) {
    this.#s3 = s3 instanceof S3Client ? s3 : new S3Client(s3);
    this.#cache = new LocalMediaStorage(path.join(dataDir, 's3-cache'));
  }

  async put(key: string, from: string): Promise<string> {
    await this.#s3.putObject(key, await readFile(from));
    await this.#cache.put(key, from);
    return key;
  }

  async localPath(storagePath: string): Promise<string | undefined> {
    const cached = this.#cache.pathFor(storagePath);
    if (await this.#cache.localPath(cached)) return cached;
    let job = this.#fetching.get(storagePath);
    if (!job) {
      job = (async () => {
        const body = await this.#s3.getObject(storagePath);
        if (!body) return undefined;
        await mkdir(path.dirname(cached), { recursive: true });
        const tmp = `${cached}.${process.pid}.part`;
        await writeFile(tmp, body);
        await rename(tmp, cached);
        return cached;
      })().finally(() => this.#fetching.delete(storagePath));
      this.#fetching.set(storagePath, job);
    }
    return job;
  }

  async remove(storagePath: string): Promise<void> {
    await this.#s3.deleteObject(storagePath);
    await this.#cache.remove(this.#cache.pathFor(storagePath));
  }

  /** Drops the local copy only (tests of a cold cache; an operator freeing disk). */
  async evict(storagePath: string): Promise<void> {
    await this.#cache.remove(this.#cache.pathFor(storagePath));
  }
}

/** The asset storage the configuration names (`storage.backend`, docs/assets.md). */
export function mediaStorageFor(config: Config): MediaStorage {
  const s = config.storage;
  if (s?.backend !== 's3') return new LocalMediaStorage(config.dataDir); // configs built by hand (tests) lack storage
  if (!s.s3Endpoint)
    throw new ConfigError('storage.s3Endpoint', 'SIMU_S3_ENDPOINT', '', 'an S3 URL when storage.backend is s3');
  if (!s.s3Bucket)
    throw new ConfigError('storage.s3Bucket', 'SIMU_S3_BUCKET', '', 'a bucket name when storage.backend is s3');
  return new S3MediaStorage(config.dataDir, {
    endpoint: s.s3Endpoint,
    bucket: s.s3Bucket,
    region: s.s3Region,
    accessKeyId: s.s3AccessKeyId,
    secretAccessKey: s.s3SecretAccessKey,
    ...(s.s3SessionToken ? { sessionToken: s.s3SessionToken } : {}),
    virtualHostedStyle: s.s3VirtualHosted,
  });
}
