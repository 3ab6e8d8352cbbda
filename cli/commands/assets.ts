import { readFile, stat } from 'node:fs/promises';
import { AssetLibrary, MAX_ASSET_BYTES, mediaStorageFor } from '../../media/index.js';
import { loadConfig } from '../../config/index.js';
import { assetOut } from '../../api/index.js';
import { findAccount, type AssetRow, type Db } from '../../store/index.js';
import { Flags, UsageError } from '../args.js';
import type { Command, CommandGroup } from '../command.js';

/**
 * Operator commands for account audio assets (docs/assets.md). They act on the
 * store and the data directory directly, so they work whether or not the switch is running.
 */
async function accountId(db: Db, id: string | undefined): Promise<string> {
  if (!id) throw new UsageError('an account id is required');
  if (!(await findAccount(db, id))) throw new UsageError(`no account with id ${id}`);
  return id;
}

const library = (db: Db) => {
  const config = loadConfig();
  return new AssetLibrary({ db, dataDir: config.dataDir, storage: mediaStorageFor(config) });
};

/** An asset as the JSON output shows it: the API's shape. */
const present = assetOut;

const line = (a: AssetRow) =>
  `${a.id}  ${(a.is_active ? 'active' : 'inactive').padEnd(8)}  ${a.duration_seconds.toFixed(1).padStart(7)} s  ` +
  `${a.original_format.padEnd(4)}  ${a.name}`;

/** Asset errors carry a code and status; the CLI shows them as usage errors (exit 2). */
async function asUsage<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    const err = e as { code?: string; status?: number; message?: string };
    if (typeof err.status === 'number' && err.status < 500) throw new UsageError(`${err.message} (${err.code})`);
    throw e;
  }
}

const assetsList: Command = async (db, args, out) => {
  new Flags(args).done();
  const id = await accountId(db, args.positional[0]);
  const rows = await library(db).list(id);
  out.print(rows.map(line).join('\n') || '(no assets)', rows.map(present));
};

const assetsUpload: Command = async (db, args, out) => {
  const f = new Flags(args);
  const name = f.string('name', { required: true })!;
  f.done();
  const id = await accountId(db, args.positional[0]);
  const file = args.positional[1];
  if (!file) throw new UsageError('a FILE to upload is required');
  const st = await stat(file).catch(() => undefined);
  if (!st?.isFile()) throw new UsageError(`cannot read ${file}`);
  if (st.size > MAX_ASSET_BYTES) throw new UsageError(`${file} is larger than ${MAX_ASSET_BYTES} bytes`);
  const row = await asUsage(library(db).upload(id, name, await readFile(file)));
  out.print(
    `asset ${row.id} "${row.name}" uploaded: ${row.duration_seconds} s, from ${row.original_format}`,
    present(row),
  );
};

const assetsRename: Command = async (db, args, out) => {
  const f = new Flags(args);
  const to = f.string('to', { required: true })!;
  f.done();
  const id = await accountId(db, args.positional[0]);
  const lib = library(db);
  const asset = await asUsage(lib.resolve(id, args.positional[1] ?? ''));
  const row = await asUsage(lib.rename(id, asset.id, to));
  out.print(`asset ${row.id} renamed "${asset.name}" -> "${row.name}"`, present(row));
};

const setActive =
  (active: boolean): Command =>
  async (db, args, out) => {
    new Flags(args).done();
    const id = await accountId(db, args.positional[0]);
    const lib = library(db);
    const asset = await asUsage(lib.resolve(id, args.positional[1] ?? ''));
    const row = await lib.setActive(id, asset.id, active);
    out.print(`asset ${row.id} "${row.name}" ${active ? 'active' : 'inactive (Play answers PLAY.0404)'}`, present(row));
  };

const assetsDelete: Command = async (db, args, out) => {
  new Flags(args).done();
  const id = await accountId(db, args.positional[0]);
  const lib = library(db);
  const asset = await asUsage(lib.resolve(id, args.positional[1] ?? ''));
  await lib.delete(id, asset.id);
  out.print(`asset ${asset.id} "${asset.name}" deleted`, { deleted: asset.id });
};

export const assetsCommands: CommandGroup = {
  noun: 'assets',
  help: `  assets list ID | assets upload ID FILE --name N   account audio for <Play asset="N"> (docs/assets.md)
  assets rename ID ASSET --to N | assets activate ID ASSET | assets deactivate ID ASSET
  assets delete ID ASSET                         (ASSET: uuid or name)`,
  commands: {
    'assets list': assetsList,
    'assets upload': assetsUpload,
    'assets rename': assetsRename,
    'assets deactivate': setActive(false),
    'assets activate': setActive(true),
    'assets delete': assetsDelete,
  },
};
