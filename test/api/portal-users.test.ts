import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { insertAccount, migrate, openDb, type Db } from '../../store/index.js';
import { totp } from '../../api/totp.js';
import { addPortalUser, checkPassword, hashPassword, spendTotp } from '../../api/portal-users.js';

describe('api/portal-users: portal passwords and one-time codes', () => {
  let db: Db;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'simu-web-users-'));
    db = openDb({ databaseUrl: '', dataDir: dir });
    await migrate(db);
  });
  after(async () => {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('hashes passwords with scrypt and a per-hash salt', async () => {
    const a = await hashPassword('correct horse battery');
    const b = await hashPassword('correct horse battery');
    assert.notEqual(a, b);
    assert.match(a, /^scrypt\$32768\$8\$1\$[0-9a-f]{32}\$[0-9a-f]{64}$/);
    assert.equal(await checkPassword('correct horse battery', a), true);
    assert.equal(await checkPassword('correct horse batterz', a), false);
    assert.equal(await checkPassword('x', 'not-a-hash'), false);
  });

  it('refuses short passwords and duplicate emails', async () => {
    const acct = await insertAccount(db, 'a');
    await assert.rejects(addPortalUser(db, acct.id, 'x@example.com', 'short'), { code: 'PORTAL_PASSWORD_WEAK' });
    await addPortalUser(db, acct.id, 'X@example.com', 'long enough pw');
    await assert.rejects(addPortalUser(db, acct.id, 'x@example.com', 'long enough pw'), { code: 'PORTAL_USER_EXISTS' });
  });

  it('spends a code once, refuses earlier steps after a later one, and marks the user enrolled', async () => {
    const acct = await insertAccount(db, 'b');
    const u = await addPortalUser(db, acct.id, 'y@example.com', 'long enough pw');
    assert.equal(u.totp_enrolled, false);
    const t = Date.now();
    assert.equal(await spendTotp(db, u.id, totp(u.totp_secret, t), t), true);
    assert.equal(await spendTotp(db, u.id, totp(u.totp_secret, t), t), false, 'replayed');
    assert.equal(await spendTotp(db, u.id, totp(u.totp_secret, t - 30_000), t), false, 'an earlier step');
    assert.equal(await spendTotp(db, u.id, totp(u.totp_secret, t + 30_000), t), true, 'the next step');
    assert.equal(await spendTotp(db, u.id, totp(u.totp_secret, t + 90_000), t), false, 'outside the window');
    const row = await db('portal_users').where({ id: u.id }).first();
    assert.equal(Boolean(row.totp_enrolled), true);
  });
});
