import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import knexFactory from 'knex';
import { openDb, migrate, insertAccount, type Db } from '../../../store/index.js';
import { post } from '../../../billing/index.js';
import { startPostgres } from '../../support/postgres.js';
import { carrierCallsDid } from '../support/harness.js';
import { useCarrierSwitch } from '../support/carrier-switch.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');
const run = promisify(execFile);

/** The operator's `bin/simu` as a process of its own, with the data directory (and store) given. */
function simu(args: string[], env: Record<string, string>) {
  return run(path.join(ROOT, 'bin', 'simu'), args, { env: { ...process.env, ...env }, cwd: os.tmpdir() });
}

async function simuFails(args: string[], env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  try {
    await simu(args, env);
  } catch (e) {
    const err = e as { code: number; stderr: string };
    return { code: err.code, stderr: err.stderr };
  }
  assert.fail(`simu ${args.join(' ')} succeeded`);
}

/** Each call's row and its ledger rows, as the restored store must hold them. */
async function callsWithLedger(db: Db, ids: string[]) {
  const calls = await db('calls')
    .whereIn('id', ids)
    .orderBy('id')
    .select('id', 'status', 'reason_code', 'duration_seconds', 'cost_cents', 'ended_at');
  const ledger = await db('wallet_transactions')
    .whereIn('call_id', ids)
    .orderBy('id')
    .select('id', 'call_id', 'direction', 'kind', 'amount_cents', 'balance_before_cents');
  return { calls, ledger };
}

async function balanceAndLedgerNet(db: Db, accountId: string): Promise<[number, number]> {
  const acct = await db('accounts').where({ id: accountId }).first('balance_cents');
  const net = await db('wallet_transactions')
    .where({ account_id: accountId })
    .select(db.raw("sum(case when direction = 'credit' then amount_cents else -amount_cents end) as net"))
    .first();
  return [Number(acct!.balance_cents), Number((net as { net: unknown }).net ?? 0)];
}

describe('e2e: online backup of the SQLite store under SIPp load, and restore (simu backup, simu restore)', function () {
  this.timeout(120000);
  const DID = '+254711200077';
  const t = useCarrierSwitch({ did: DID });

  it('a backup taken while calls are placed holds every call ended before it began, its ledger rows and balance', async () => {
    t.server.verbs('/short', '<Response><Say>Backups.</Say><Pause length="1"/><Hangup/></Response>');
    await t.setInboundUrl(t.server.url('/short'));
    // 100 calls at 8/s, each about 2 s long: calls start, run and end before, during and after the backup.
    t.sipp = carrierCallsDid({
      sip: t.ports.sip,
      did: DID.slice(1),
      port: t.callerPort,
      sink: t.sinkPort,
      calls: 100,
      extra: ['-r', '8', '-l', '30'],
    });
    const db = t.ctx.db;
    const ended = () => db('calls').where({ account_id: t.acct.id }).whereNotNull('ended_at').count({ n: '*' }).first();
    for (let i = 0; i < 200 && Number((await ended())?.n ?? 0) < 8; i++) await new Promise((r) => setTimeout(r, 50));
    const live = await db('calls').where({ account_id: t.acct.id, status: 'answered' }).count({ n: '*' }).first();
    assert.ok(Number(live?.n) > 0, 'calls are up while the backup runs');

    const beganAt = new Date().toISOString();
    const endedBefore = (await db('calls')
      .where({ account_id: t.acct.id })
      .where('ended_at', '<', beganAt)
      .pluck('id')) as string[];
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'simu-backup-')), 'simu-backup.db');
    const dataDir = t.ctx.config.dataDir;
    const backup = await simu(['backup', file], { SIMU_DATA_DIR: dataDir });
    assert.match(backup.stdout, /backed up \d+ pages/);
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    assert.ok(endedBefore.length >= 8, `${endedBefore.length} calls ended before the backup`);

    // Not over the running switch's store: it holds it open.
    const refused = await simuFails(['restore', file], { SIMU_DATA_DIR: dataDir });
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /is open in pid \d+.*stop the switch first \(STORE_IN_USE\)/);

    const second = mkdtempSync(path.join(os.tmpdir(), 'simu-restored-'));
    const restored = await simu(['restore', file], { SIMU_DATA_DIR: second });
    assert.match(restored.stdout, /restored /);
    const copy = openDb({ databaseUrl: '', dataDir: second });
    try {
      await migrate(copy);
      const want = await callsWithLedger(db, endedBefore);
      const got = await callsWithLedger(copy, endedBefore);
      assert.equal(got.calls.length, endedBefore.length);
      assert.deepEqual(got, want);
      assert.ok(want.ledger.length > 0, 'the calls were charged');
      const [balance, net] = await balanceAndLedgerNet(copy, t.acct.id);
      assert.equal(balance, net, 'the restored balance is its ledger, to the cent');
      const inFlight = await copy('calls')
        .whereIn('status', ['initiated', 'ringing', 'answered'])
        .count({ n: '*' })
        .first();
      assert.ok(Number(inFlight?.n) > 0, 'the copy was taken with calls up (one instant of a busy store)');
    } finally {
      await copy.destroy();
    }
  });

  it('restore refuses a file that is not a Simu store, and keeps the store it replaces', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-restore-'));
    const junk = path.join(dir, 'junk.db');
    execFileSync('sh', ['-c', `printf 'not a database' > "$1"`, 'sh', junk]);
    const bad = await simuFails(['restore', junk], { SIMU_DATA_DIR: dir });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /BACKUP_INVALID/);

    const a = mkdtempSync(path.join(os.tmpdir(), 'simu-a-'));
    const b = mkdtempSync(path.join(os.tmpdir(), 'simu-b-'));
    for (const d of [a, b]) {
      const s = openDb({ databaseUrl: '', dataDir: d });
      await migrate(s);
      await s.destroy();
    }
    const file = path.join(dir, 'a.db');
    await simu(['backup', file], { SIMU_DATA_DIR: a });
    const again = await simuFails(['backup', file], { SIMU_DATA_DIR: a });
    assert.match(again.stderr, /exists already.*\(BACKUP_EXISTS\)/);
    const out = await simu(['restore', file, '--json'], { SIMU_DATA_DIR: b });
    const previous = JSON.parse(out.stdout).previous as string;
    assert.ok(previous && existsSync(previous), 'the replaced store is kept');
  });

  it('PostgreSQL: simu backup names pg_dump; pg_dump and pg_restore (README) carry calls, ledger and balances', async () => {
    const admin = await startPostgres();
    const a = knexFactory({ client: 'pg', connection: admin });
    const src = `simu_bk_src_${process.pid}`;
    const dst = `simu_bk_dst_${process.pid}`;
    await a.raw(`create database ${src}`);
    await a.raw(`create database ${dst}`);
    await a.destroy();
    const srcUrl = admin.replace(/\/postgres$/, `/${src}`);
    const dstUrl = admin.replace(/\/postgres$/, `/${dst}`);

    const refused = await simuFails(['backup', '/tmp/x.dump'], { SIMU_DATABASE_URL: srcUrl });
    assert.match(refused.stderr, /pg_dump --format=custom/);

    const db = openDb({ databaseUrl: srcUrl, dataDir: os.tmpdir() });
    await migrate(db);
    const accountId = (await insertAccount(db, 'Backup Ltd')).id;
    await post(db, { accountId, direction: 'credit', kind: 'topup', amountCents: 50_000 });
    await post(db, { accountId, direction: 'debit', kind: 'adjustment', amountCents: 1_234 });
    await db.destroy();

    const dump = path.join(mkdtempSync(path.join(os.tmpdir(), 'simu-pgdump-')), 'simu.dump');
    const bin = (name: string) => {
      const base = '/usr/lib/postgresql';
      const versions = execFileSync('ls', [base]).toString().trim().split('\n').sort();
      return path.join(base, versions[versions.length - 1]!, 'bin', name);
    };
    execFileSync(bin('pg_dump'), ['--format=custom', `--file=${dump}`, srcUrl]);
    execFileSync(bin('pg_restore'), ['--clean', '--if-exists', `--dbname=${dstUrl}`, dump]);
    const copy = openDb({ databaseUrl: dstUrl, dataDir: os.tmpdir() });
    try {
      const [balance, net] = await balanceAndLedgerNet(copy, accountId);
      assert.equal(balance, 50_000 - 1_234);
      assert.equal(net, balance);
    } finally {
      await copy.destroy();
    }
  });
});
