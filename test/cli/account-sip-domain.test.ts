import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { getAccount, openDb, type Db } from '../../store/index.js';
import { simu } from '../support/cli.js';

describe('simu account sip-domain', function () {
  this.timeout(30000);
  let db: Db;
  const saved = { dir: process.env.SIMU_DATA_DIR, domain: process.env.SIMU_SIP_DOMAIN };
  before(() => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'simu-sipdomain-'));
    process.env.SIMU_DATA_DIR = dataDir;
    process.env.SIMU_SIP_DOMAIN = 'sip.example.net';
    db = openDb({ databaseUrl: '', dataDir });
  });
  after(async () => {
    await db.destroy();
    for (const [k, v] of [
      ['SIMU_DATA_DIR', saved.dir],
      ['SIMU_SIP_DOMAIN', saved.domain],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('shows the label derived at creation, sets another, refuses a bad or taken one', async () => {
    const id = JSON.parse((await simu('account', 'create', '--name', 'Acme Ltd', '--json')).stdout).account.uuid;
    const other = JSON.parse((await simu('account', 'create', '--name', 'Zed', '--json')).stdout).account.uuid;
    const shown = await simu('account', 'sip-domain', id, '--json');
    assert.equal(shown.code, 0, shown.stderr);
    assert.deepEqual(JSON.parse(shown.stdout), {
      uuid: id,
      sip_label: 'acme-ltd',
      sip_domain: 'acme-ltd.sip.example.net',
    });
    const set = await simu('account', 'sip-domain', id, 'acme');
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /SIP domain acme\.sip\.example\.net/);
    assert.equal((await getAccount(db, id)).sip_label, 'acme');
    const taken = await simu('account', 'sip-domain', other, 'acme');
    assert.equal(taken.code, 2);
    assert.match(taken.stderr, /SIP_DOMAIN_TAKEN/);
    const bad = await simu('account', 'sip-domain', other, '1-bad_label');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /INVALID_SIP_DOMAIN/);
    assert.equal((await getAccount(db, other)).sip_label, 'zed');
  });
});
