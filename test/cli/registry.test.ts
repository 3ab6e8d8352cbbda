import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { simu } from '../support/cli.js';
import { COMMAND_GROUPS, COMMAND_NAMES } from '../../cli/index.js';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** The command's full name as a word sequence of its own (not "account list" inside "account listing"). */
const named = (name: string) => new RegExp(`(^|[\\s|])${escape(name)}(?=\\s|$|,)`, 'm');

describe('operator CLI: the command registry (cli/registry.ts)', () => {
  it('holds every command of every noun file in cli/commands/, among them the assets, retention, portal-user and docs commands', () => {
    const files = readdirSync(path.join(import.meta.dirname, '../../cli/commands')).filter((f) => f.endsWith('.ts'));
    assert.deepEqual(COMMAND_GROUPS.map((g) => `${g.noun}.ts`).sort(), files.sort());
    for (const name of [
      'account create',
      'account retention',
      'assets upload',
      'assets delete',
      'portal-user add',
      'docs codes',
      'bans lift',
    ]) {
      assert.ok(COMMAND_NAMES.includes(name), name);
    }
    assert.equal(new Set(COMMAND_NAMES).size, COMMAND_NAMES.length);
  });

  it('simu help names every registered command in full', async () => {
    const r = await simu('help');
    assert.equal(r.code, 0);
    const missing = COMMAND_NAMES.filter((name) => !named(name).test(r.stdout));
    assert.deepEqual(missing, [], `help does not name: ${missing.join(', ')}`);
  });

  it('an unknown command exits 2 and lists every registered command, those of the assets and portal-user files too', async () => {
    const r = await simu('frob', 'nicate');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown command "frob nicate"/);
    const listed = r.stderr
      .slice(r.stderr.indexOf('commands: ') + 'commands: '.length)
      .trim()
      .split(', ');
    assert.deepEqual(listed, [...COMMAND_NAMES]);
    for (const name of ['assets list', 'account retention', 'portal-user add'])
      assert.ok(listed.includes(name), `${name} missing from: ${r.stderr}`);
  });
});
