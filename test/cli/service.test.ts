import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { simu } from '../support/cli.js';

describe('operator CLI: simu service install', () => {
  it('--dry-run prints a unit of this checkout that systemd-analyze verify accepts', async () => {
    const r = await simu('service', 'install', '--dry-run', '--user', 'simu', '--stop-seconds', '90');
    assert.equal(r.code, 0, r.stderr);
    const root = path.resolve(import.meta.dirname, '..', '..');
    assert.match(
      r.stdout,
      new RegExp(`^ExecStart=${process.execPath} --enable-source-maps ${root}/dist/main\\.js$`, 'm'),
    );
    for (const line of ['User=simu', 'Restart=on-failure', 'TimeoutStopSec=90', 'KillMode=mixed', 'LimitNOFILE=65536'])
      assert.match(r.stdout, new RegExp(`^${line}$`, 'm'));
    assert.match(r.stdout, /^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'simu-unit-')), 'simu.service');
    writeFileSync(file, r.stdout);
    // Exit status 0 and nothing said: systemd finds no fault in the unit.
    const said = execFileSync('systemd-analyze', ['verify', file], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
    assert.equal(said.trim(), '');
  });

  it('refuses a user name that is not one, before anything is written', async () => {
    const r = await simu('service', 'install', '--dry-run', '--user', 'root;rm');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--user must be a system user name/);
  });
});
