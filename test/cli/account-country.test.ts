import assert from 'node:assert/strict';
import { getAccount, getSetting, sha256Hex, type Db } from '../../store/index.js';
import { METRICS_TOKEN_SETTING } from '../../api/index.js';
import { cliDataDir, simu } from '../support/cli.js';

describe('simu account country and metrics token', function () {
  this.timeout(30000);
  let db: Db;
  cliDataDir('simu-country-', (d) => (db = d));

  it('sets, shows and resets the country national numbers are read with; refuses what is no country', async () => {
    const created = await simu('account', 'create', '--name', 'Dar', '--json');
    const id = JSON.parse(created.stdout).account.uuid;
    const r = await simu('account', 'country', id, 'tz', '--json');
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { uuid: id, country: 'TZ', platform_default_country: 'KE' });
    assert.equal((await getAccount(db, id)).country, 'TZ');
    const bad = await simu('account', 'country', id, 'XX');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /not a country code/);
    assert.equal((await simu('account', 'country', id, 'default')).code, 0);
    assert.equal((await getAccount(db, id)).country, null);
  });

  it('metrics token: a new bearer token each time, only its SHA-256 stored', async () => {
    const first = await simu('metrics', 'token', '--json');
    assert.equal(first.code, 0, first.stderr);
    const { token } = JSON.parse(first.stdout);
    assert.match(token, /^mt_[A-Za-z0-9_-]{32}$/);
    assert.equal(await getSetting(db, METRICS_TOKEN_SETTING), sha256Hex(token));
    const second = JSON.parse((await simu('metrics', 'token', '--json')).stdout).token;
    assert.notEqual(second, token);
    assert.equal(await getSetting(db, METRICS_TOKEN_SETTING), sha256Hex(second), 'the last one replaces the first');
  });
});
