import assert from 'node:assert/strict';
import { cliDataDir, simu } from '../support/cli.js';
import { type Db } from '../../store/index.js';

describe('operator CLI', function () {
  this.timeout(30000);
  let db: Db;
  cliDataDir('simu-cli-', (d) => (db = d));

  it('account create --json prints the Account and its first API key, storing only the hash', async () => {
    const r = await simu('account', 'create', '--name', 'Acme', '--balance', '100.00', '--json');
    assert.equal(r.code, 0, r.stderr);
    const { account, api_key } = JSON.parse(r.stdout);
    assert.deepEqual(Object.keys(account).sort(), ['name', 'status', 'uuid', 'wallet_balance']);
    assert.equal(account.wallet_balance, '100.00');
    assert.equal(account.status, 'active');
    assert.match(api_key, /^sk_/);
    const keys = await db('api_keys').where({ account_id: account.uuid });
    assert.equal(keys.length, 1);
    assert.notEqual(keys[0].key_hash, api_key);
    const ledger = await db('wallet_transactions').where({ account_id: account.uuid });
    assert.deepEqual(
      ledger.map((l) => [l.kind, Number(l.amount_cents), Number(l.balance_before_cents)]),
      [['topup', 10000, 0]],
    );
  });

  it('bad input exits 2 with a message naming what was wrong, and writes nothing', async () => {
    const before = await db('accounts').count({ n: '*' }).first();
    for (const [argv, pattern] of [
      [['account', 'create', '--name', 'X', '--balance', '1.234'], /at most two decimals/],
      [['account', 'create'], /--name is required/],
      [['account', 'create', '--name', 'Y', '--colour', 'red'], /unknown option --colour/],
      [['wallet', 'topup', 'no-such-id', '5.00'], /no account with id no-such-id/],
      [['numbers', 'add', '0700'], /E164 must look like/],
      [['trunks', 'add', '--name', 't', '--host', 'h', '--transport', 'sctp'], /--transport must be udp, tcp or tls/],
      [['rates', 'set', 'premium', '1.00'], /KIND must be one of/],
      [['frob'], /unknown command/],
    ] as Array<[string[], RegExp]>) {
      const r = await simu(...argv);
      assert.equal(r.code, 2, argv.join(' '));
      assert.match(r.stderr, pattern, argv.join(' '));
    }
    const afterCount = await db('accounts').count({ n: '*' }).first();
    assert.deepEqual(afterCount, before);
    assert.equal((await db('trunks')).length, 0);
  });

  it('tops up, sets caps, adds pool numbers and trunks, sets rates and drains the platform', async () => {
    const { account } = JSON.parse((await simu('account', 'create', '--name', 'Ops', '--json')).stdout);
    assert.equal((await simu('wallet', 'topup', account.uuid, '25.50')).code, 0);
    assert.equal((await db('accounts').where({ id: account.uuid }).first()).balance_cents, 2550);
    assert.equal((await simu('account', 'caps', account.uuid, '--concurrency', '3', '--cps', '2')).code, 0);
    const row = await db('accounts').where({ id: account.uuid }).first();
    assert.equal(row.max_concurrent_calls, 3);
    assert.equal(row.max_cps, 2);
    assert.equal((await simu('numbers', 'add', '+254700000500', '--count', '3')).code, 0);
    assert.deepEqual(
      (await db('numbers').whereNull('account_id').orderBy('number')).map((n) => n.number),
      ['+254700000500', '+254700000501', '+254700000502'],
    );
    const c1 = ['--name', 'c1', '--host', '127.0.0.1', '--port', '25060', '--inbound', 'none'];
    assert.equal((await simu('trunks', 'add', ...c1)).code, 0);
    const trunks = JSON.parse((await simu('trunks', 'list', '--json')).stdout);
    assert.equal(trunks[0].port, 25060);
    assert.equal((await simu('rates', 'set', 'outbound', '3.00', '--prefix', '254')).code, 0);
    assert.equal((await simu('platform', 'drain')).code, 0);
    assert.equal((await db('platform_settings').where({ key: 'draining' }).first()).value, 'true');
    assert.equal((await simu('account', 'suspend', account.uuid)).code, 0);
    assert.equal((await db('accounts').where({ id: account.uuid }).first()).status, 'suspended');
  });

  it('bans: an operator adds, lists and lifts a ban; a bad address exits 2', async () => {
    assert.equal((await simu('bans', 'add', '203.0.113.9', '--seconds', '60')).code, 0);
    const listed = JSON.parse((await simu('bans', 'list', '--json')).stdout);
    assert.deepEqual(
      listed.map((b: { address: string; reason: string }) => [b.address, b.reason]),
      [['203.0.113.9', 'operator']],
    );
    assert.equal((await simu('bans', 'lift', '203.0.113.9')).code, 0);
    assert.deepEqual(JSON.parse((await simu('bans', 'list', '--json')).stdout), []);
    const bad = await simu('bans', 'lift', 'not-an-ip');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /not an IP address/);
  });

  it('stream token mints a single-use staff token', async () => {
    const r = JSON.parse((await simu('stream', 'token', '--json')).stdout);
    assert.match(r.token, /^st_/);
    const row = await db('stream_tokens').where({ staff: true }).first();
    assert.ok(row, 'stored as a staff token');
    assert.notEqual(row.token_hash, r.token);
  });

  it('portal-user add stores the user (scrypt hash, not the password) and prints the otpauth URI once', async () => {
    const { account } = JSON.parse((await simu('account', 'create', '--name', 'Portal', '--json')).stdout);
    const r = await simu(
      'portal-user',
      'add',
      account.uuid,
      '--email',
      'Ann@Example.com',
      '--password',
      'long enough pw',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /otpauth:\/\/totp\//);
    const row = await db('portal_users').where({ account_id: account.uuid }).first();
    assert.equal(row.email, 'ann@example.com');
    assert.match(row.password_hash, /^scrypt\$/);
    const weak = await simu('portal-user', 'add', account.uuid, '--email', 'bob@example.com', '--password', 'short');
    assert.equal(weak.code, 2);
    assert.match(weak.stderr, /10 characters/);
  });
});
