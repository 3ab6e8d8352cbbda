import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { cliDataDir, simu } from '../support/cli.js';
import { listRoutes, listTrunks, type Db } from '../../store/index.js';

/**
 * `simu trunks` safety and money as people read it: a trunk's inbound sources are never implied by its host, a
 * loopback or local inbound source is warned about, removing a trunk that routes use is refused unless forced,
 * and rates print in KES with two decimals (the unit the CLI takes).
 */
describe('simu trunks: inbound sources, removal, money in KES', function () {
  this.timeout(60000);
  let db: Db;
  cliDataDir('simu-trunks-', (d) => (db = d), { migrated: true });

  it('trunks add without --inbound is refused: the host is never taken as an inbound source', async () => {
    const r = await simu('trunks', 'add', '--name', 'local', '--host', '127.0.0.1', '--port', '5080');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--inbound is required/);
    assert.match(r.stderr, /--inbound none/, 'says how to add an outbound-only trunk');
    assert.deepEqual(await listTrunks(db), [], 'nothing written');
  });

  it('--inbound none adds an outbound-only trunk: no INVITE is taken as coming from it', async () => {
    const r = await simu('trunks', 'add', '--name', 'out-only', '--host', '127.0.0.1', '--inbound', 'none', '--json');
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout).inbound_addresses, []);
    const human = await simu('trunks', 'add', '--name', 'out-only-2', '--host', '192.0.2.20', '--inbound', 'none');
    assert.match(human.stdout, /no inbound calls/);
    assert.equal(human.stderr, '', 'no warning for a trunk that takes no calls');
  });

  it('an inbound source that is loopback or an address of this box is taken, with a warning on stderr', async () => {
    const own =
      Object.values(networkInterfaces())
        .flat()
        .find((i) => i && i.family === 'IPv4' && !i.internal)?.address ?? '127.0.0.2';
    for (const [name, inbound] of [
      ['lo-carrier', '127.0.0.1'],
      ['lo-range', '127.0.0.0/8'],
      ['own-carrier', own],
    ]) {
      const r = await simu('trunks', 'add', '--name', name, '--host', '192.0.2.30', '--inbound', inbound);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /warning: .*this box/, `${inbound}: ${r.stderr}`);
      assert.match(r.stderr, /phones/, inbound);
    }
    const carrier = await simu('trunks', 'add', '--name', 'far', '--host', '192.0.2.40', '--inbound', '192.0.2.40');
    assert.equal(carrier.code, 0, carrier.stderr);
    assert.equal(carrier.stderr, '');
    assert.match(carrier.stdout, /inbound from 192\.0\.2\.40/);
  });

  it('trunks remove refuses a trunk that routes use and lists them; --force removes both', async () => {
    assert.equal((await simu('trunks', 'add', '--name', 'used', '--host', '192.0.2.50', '--inbound', 'none')).code, 0);
    assert.equal((await simu('routes', 'add', '254', 'used', '--buy', '1.20')).code, 0);
    assert.equal((await simu('routes', 'add', 'emergency', 'used', '--buy', '0')).code, 0);
    const refused = await simu('trunks', 'remove', 'used');
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /2 routes use trunk used/);
    assert.match(refused.stderr, /254 .*1\.20 KES\/min/);
    assert.match(refused.stderr, /emergency/);
    assert.match(refused.stderr, /--force/);
    assert.ok(
      (await listTrunks(db)).some((t) => t.name === 'used'),
      'the trunk stays',
    );
    assert.equal((await listRoutes(db)).filter((r) => r.trunk_name === 'used').length, 2, 'its routes stay');

    const forced = await simu('trunks', 'remove', 'used', '--force', '--json');
    assert.equal(forced.code, 0, forced.stderr);
    assert.deepEqual(JSON.parse(forced.stdout), { removed: 'used', routes_removed: 2 });
    assert.ok(!(await listTrunks(db)).some((t) => t.name === 'used'));
    assert.equal((await listRoutes(db)).filter((r) => r.trunk_name === 'used').length, 0);
    // A trunk no route uses goes without --force.
    assert.equal((await simu('trunks', 'remove', 'far')).code, 0);
  });

  it('routes test, routes list and rates list print money in KES with two decimals, never cents', async () => {
    assert.equal((await simu('trunks', 'add', '--name', 'ka', '--host', '192.0.2.60', '--inbound', 'none')).code, 0);
    assert.equal((await simu('trunks', 'add', '--name', 'kb', '--host', '192.0.2.61', '--inbound', 'none')).code, 0);
    assert.equal((await simu('rates', 'set', 'outbound', '2.00', '--prefix', '255')).code, 0);
    assert.equal((await simu('routes', 'add', '255', 'ka', '--buy', '1.25')).code, 0);
    assert.equal((await simu('routes', 'add', '255', 'kb', '--buy', '2.50')).code, 0);
    const test = await simu('routes', 'test', '+255712345678');
    assert.equal(test.code, 0, test.stderr);
    assert.match(test.stdout, /sell rate 2\.00 KES\/min/);
    assert.match(test.stdout, /1\. ka .*buy 1\.25 KES\/min/);
    assert.match(test.stdout, /skipped .*buy rate 2\.50 KES\/min > sell rate 2\.00 KES\/min/);
    assert.doesNotMatch(test.stdout, /\b(125|250|200)\b/, 'no amount in cents');
    const json = JSON.parse((await simu('routes', 'test', '+255712345678', '--json')).stdout);
    assert.match(json.tried[0].why, /buy 1\.25 KES\/min$/);
    const list = await simu('routes', 'list');
    assert.match(list.stdout, /255 +ka .*buy 1\.25 KES\/min/);
    const rates = await simu('rates', 'list');
    assert.match(rates.stdout, /outbound +255 +2\.00 KES\/min/);
  });
});
