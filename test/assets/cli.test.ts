import assert from 'node:assert/strict';
import { simu } from '../support/cli.js';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findPlayableAsset, openDb, type Db } from '../../store/index.js';
import { makeSpeechFiles } from './fixtures.js';

/** Issue 11: the operator's `simu assets ...` and `simu account retention` on a real store and data directory. */
describe('operator CLI: assets and recording retention', function () {
  this.timeout(30000);
  let dataDir: string;
  let db: Db;
  let accountId: string;
  let src: ReturnType<typeof makeSpeechFiles>;
  const saved = process.env.SIMU_DATA_DIR;

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'simu-cli-assets-'));
    process.env.SIMU_DATA_DIR = dataDir;
    db = openDb({ databaseUrl: '', dataDir });
    const r = await simu('account', 'create', '--name', 'Cli Assets', '--json');
    accountId = JSON.parse(r.stdout).account.uuid;
    src = makeSpeechFiles('Please hold.');
  });
  after(async () => {
    await db.destroy();
    rmSync(src.dir, { recursive: true, force: true });
    if (saved === undefined) delete process.env.SIMU_DATA_DIR;
    else process.env.SIMU_DATA_DIR = saved;
  });

  it('uploads, lists, renames, deactivates, activates and deletes an asset', async () => {
    const up = await simu('assets', 'upload', accountId, src.ogg, '--name', 'hold', '--json');
    assert.equal(up.code, 0, up.stderr);
    const asset = JSON.parse(up.stdout);
    assert.equal(asset.original_format, 'ogg');
    const file = path.join(dataDir, 'assets', accountId, `${asset.uuid}.wav`);
    assert.equal(await findPlayableAsset(db, accountId, 'hold'), file);

    const list = await simu('assets', 'list', accountId);
    assert.match(list.stdout, new RegExp(`${asset.uuid}\\s+active .* ogg\\s+hold`));
    assert.equal((await simu('assets', 'rename', accountId, 'hold', '--to', 'hold-music')).code, 0);
    assert.equal((await simu('assets', 'deactivate', accountId, 'hold-music')).code, 0);
    assert.equal(await findPlayableAsset(db, accountId, 'hold-music'), undefined);
    assert.equal((await simu('assets', 'activate', accountId, asset.uuid)).code, 0);
    assert.equal(await findPlayableAsset(db, accountId, 'hold-music'), file);
    assert.equal((await simu('assets', 'delete', accountId, 'hold-music')).code, 0);
    assert.equal(existsSync(file), false);
  });

  it('refuses bad input with exit 2 and a message', async () => {
    for (const [argv, pattern] of [
      [['assets', 'upload', accountId, src.wav], /--name is required/],
      [['assets', 'upload', accountId, '/no/such/file.wav', '--name', 'x'], /cannot read/],
      [['assets', 'upload', accountId, import.meta.filename, '--name', 'x'], /ASSET_FORMAT_UNSUPPORTED/],
      [['assets', 'list', 'no-such-account'], /no account with id/],
      [['assets', 'delete', accountId, 'nothing'], /ASSET_NOT_FOUND/],
      [['account', 'retention', accountId, '--days', '0'], /--days must be/],
    ] as Array<[string[], RegExp]>) {
      const r = await simu(...argv);
      assert.equal(r.code, 2, `${argv.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, pattern, argv.join(' '));
    }
  });

  it('account retention sets and clears the account override', async () => {
    const set = await simu('account', 'retention', accountId, '--days', '14', '--json');
    assert.equal(set.code, 0, set.stderr);
    assert.equal(JSON.parse(set.stdout).recording_retention_days, 14);
    assert.equal((await db('accounts').where({ id: accountId }).first()).recording_retention_days, 14);
    const clear = await simu('account', 'retention', accountId, '--days', 'default');
    assert.match(clear.stdout, /platform default \(90 days\)/);
    assert.equal((await db('accounts').where({ id: accountId }).first()).recording_retention_days, null);
  });
});
