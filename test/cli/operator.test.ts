import assert from 'node:assert/strict';
import { addBan } from '../../sip/index.js';
import { listAudit, type Db } from '../../store/index.js';
import { cliDataDir, simu } from '../support/cli.js';

/**
 * Issue 21: the CLI's operator actions are the console's operations (api/operations.ts), so each is audited with
 * who ran it; `operator add` makes a console sign-in and `wallet topup --reason` keeps the reason in the ledger.
 */
describe('simu operator, and the audit of CLI actions', function () {
  this.timeout(30000);
  let db: Db;
  cliDataDir('simu-operator-', (d) => (db = d), { migrated: true });

  it('adds an operator once (otpauth URI printed), refuses a weak password and a second one of that email', async () => {
    const r = await simu('operator', 'add', '--email', 'Ops@Example.net', '--password', 'long enough pass', '--json');
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.email, 'ops@example.net');
    assert.match(out.otpauth_uri, /^otpauth:\/\/totp\/.*secret=[A-Z2-7]+/);
    assert.equal((await simu('operator', 'add', '--email', 'x@example.net', '--password', 'short')).code, 2);
    assert.equal((await simu('operator', 'add', '--email', 'ops@example.net', '--password', 'long enough 2')).code, 2);
  });

  it('audits suspend, resume, caps, top-up (reason in the ledger), ban lift and drain, refused ones too', async () => {
    const id = JSON.parse((await simu('account', 'create', '--name', 'Audited', '--json')).stdout).account.uuid;
    assert.equal((await simu('account', 'suspend', id)).code, 0);
    assert.equal((await simu('account', 'resume', id)).code, 0);
    assert.equal((await simu('account', 'caps', id, '--cps', '3')).code, 0);
    const t = await simu('wallet', 'topup', id, '25.00', '--reason', 'cash paid at the Kisumu office');
    assert.equal(t.code, 0, t.stderr);
    const row = await db('wallet_transactions').where({ account_id: id, kind: 'topup' }).first();
    assert.equal(row.reason, 'cash paid at the Kisumu office');
    await addBan(db, { address: '198.51.100.4', seconds: 60 });
    assert.equal((await simu('bans', 'lift', '198.51.100.4')).code, 0);
    assert.equal((await simu('bans', 'lift', '198.51.100.4')).code, 2, 'not banned any more');
    assert.equal((await simu('platform', 'drain')).code, 0);
    assert.equal((await simu('platform', 'resume')).code, 0);
    const audit = (await listAudit(db)).reverse();
    const seen = audit.filter((a) => a.action !== 'operator.add').map((a) => `${a.action} ${a.ok ? 'ok' : 'refused'}`);
    assert.deepEqual(seen, [
      'account.create ok',
      'account.suspend ok',
      'account.resume ok',
      'account.caps ok',
      'wallet.topup ok',
      'ban.lift ok',
      'ban.lift refused',
      'platform.drain ok',
      'platform.resume ok',
    ]);
    assert.ok(audit.every((a) => a.actor.startsWith('cli:')));
    assert.equal(
      JSON.parse(audit.find((a) => a.action === 'wallet.topup')!.detail).reason,
      'cash paid at the Kisumu office',
    );
    const listed = await simu('operator', 'audit', '--limit', '3');
    assert.match(listed.stdout, /platform\.resume/);
  });
});
