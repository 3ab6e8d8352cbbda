import { copyFile, mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';

/**
 * Where audio the platform keeps (assets, recordings) lives. rtpengine plays and records files on this host, so
 * every backend answers a local path to play; a remote backend would keep its objects elsewhere and a local cache.
 * Only `local` exists: no S3-compatible server is installed here to test an `s3` backend against (see
 * docs/assets.md).
 */
export interface MediaStorage {
  readonly backend: 'local';
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
