import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { listTrunks, openDb, setTrunkHealth, type Db } from '../../store/index.js';
import { simu } from '../support/cli.js';

describe('simu routes and trunks ping/register', function () {
  this.timeout(60000);
  let dataDir = '';
  const saved = process.env.SIMU_DATA_DIR;
  /** The store, opened only for the moment it is used (the CLI opens it too, and migrates at each start). */
  async function withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    const db = openDb({ databaseUrl: '', dataDir });
    try {
      return await fn(db);
    } finally {
      await db.destroy();
    }
  }
  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'simu-routes-'));
    process.env.SIMU_DATA_DIR = dataDir;
    for (const [name, port] of [
      ['alpha', '5070'],
      ['beta', '5071'],
    ])
      assert.equal(
        (await simu('trunks', 'add', '--name', name, '--host', '127.0.0.1', '--port', port, '--inbound', 'none')).code,
        0,
      );
    assert.equal((await simu('rates', 'set', 'outbound', '2.00', '--prefix', '254')).code, 0);
  });
  after(() => {
    if (saved === undefined) delete process.env.SIMU_DATA_DIR;
    else process.env.SIMU_DATA_DIR = saved;
  });

  it('adds, lists, tests and removes routes; test shows the order, the loss-making skip and down trunks', async () => {
    assert.equal((await simu('routes', 'add', '254', 'alpha', '--buy', '1.00')).code, 0);
    assert.equal((await simu('routes', 'add', '2547', 'beta', '--buy', '1.50', '--priority', '1')).code, 0);
    assert.equal((await simu('routes', 'add', '2547', 'alpha', '--buy', '2.50')).code, 0);
    const list = JSON.parse((await simu('routes', 'list', '--json')).stdout);
    assert.deepEqual(
      list.map((r: { prefix: string; trunk: string; buy_rate: string }) => [r.prefix, r.trunk, r.buy_rate]),
      [
        ['254', 'alpha', '1.00'],
        ['2547', 'alpha', '2.50'],
        ['2547', 'beta', '1.50'],
      ],
    );
    const test = JSON.parse((await simu('routes', 'test', '+254712345678', '--json')).stdout);
    assert.equal(test.sellRate, '2.00', 'KES with two decimals, as the CLI takes it');
    assert.equal(test.currency, 'KES');
    assert.deepEqual(
      test.tried.map((t: { trunk: string }) => t.trunk),
      ['beta', 'alpha'],
    );
    assert.match(test.skipped[0].why, /buy rate 2\.50 KES\/min > sell rate 2\.00 KES\/min/);

    // A trunk the switch stored as down is skipped by `routes test` too.
    await withDb(async (db) => {
      const beta = (await listTrunks(db)).find((t) => t.name === 'beta')!;
      await setTrunkHealth(db, beta.id, 'down');
    });
    const again = JSON.parse((await simu('routes', 'test', '254712345678', '--json')).stdout);
    assert.deepEqual(
      again.tried.map((t: { trunk: string }) => t.trunk),
      ['alpha'],
    );
    assert.match((await simu('trunks', 'list')).stdout, /beta .*health down/);

    assert.equal((await simu('routes', 'remove', '2547', '--trunk', 'alpha')).code, 0);
    assert.equal(JSON.parse((await simu('routes', 'list', '--json')).stdout).length, 2);
  });

  it('refuses bad prefixes, unknown trunks and registration without credentials', async () => {
    const bad = await simu('routes', 'add', '25a', 'alpha', '--buy', '1.00');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /PREFIX/);
    assert.equal((await simu('routes', 'add', '254', 'nobody', '--buy', '1.00')).code, 2);
    assert.equal((await simu('routes', 'add', '254', 'alpha')).code, 2, '--buy is required');
    assert.equal((await simu('trunks', 'ping', 'alpha', 'on')).code, 0);
    const alpha = await withDb(async (db) => (await listTrunks(db)).find((t) => t.name === 'alpha')!);
    assert.equal(alpha.options_ping, true);
    const reg = await simu('trunks', 'register', 'alpha', 'on');
    assert.equal(reg.code, 2);
    assert.match(reg.stderr, /username/);
  });
});
