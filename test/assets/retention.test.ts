import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RecordingRetention } from '../../media/index.js';
import { roomLogger, setLogLevel } from '../../config/index.js';
import {
  insertAccount,
  insertRecording,
  recordingRetentionDaysFor,
  updateAccount,
  type AccountRow,
  type Db,
} from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';

/** Issue 11: the retention sweep over a real store and real files, on a fixed clock. */
for (const kind of BOTH_DBS)
  describe(`recording retention sweep on ${kind.name}`, function () {
    let db: Db;
    let dataDir: string;
    let acct: AccountRow;
    const now = new Date('2026-06-01T12:00:00.000Z');

    before(async () => {
      setLogLevel('silent');
      db = await kind.open();
      dataDir = mkdtempSync(path.join(os.tmpdir(), 'simu-retention-'));
      mkdirSync(path.join(dataDir, 'recordings'));
      acct = await insertAccount(db, 'Retention Co');
    });
    after(() => db.destroy());

    async function recording(name: string, patch: { expires_at?: string | null; deleted?: boolean }) {
      const file = path.join(dataDir, 'recordings', `${name}.wav`);
      writeFileSync(file, Buffer.alloc(1000, 1));
      const r = await insertRecording(db, {
        account_id: acct.id,
        call_id: `call-${name}`,
        call_sid: `call_${name}`,
        size_bytes: 1000,
        duration_seconds: 3,
        storage_path: file,
        expires_at: patch.expires_at ?? null,
      });
      if (patch.deleted) await db('recordings').where({ id: r.id }).update({ deleted_at: now.toISOString() });
      return { id: r.id, file };
    }

    it('removes the audio of expired and soft-deleted recordings only, keeps their rows, and is idempotent', async () => {
      const expired = await recording('expired', { expires_at: '2026-06-01T11:59:59.000Z' });
      const deleted = await recording('deleted', { expires_at: '2026-09-01T00:00:00.000Z', deleted: true });
      const kept = await recording('kept', { expires_at: '2026-06-01T12:00:01.000Z' });
      const forever = await recording('forever', { expires_at: null });
      const job = new RecordingRetention({
        db,
        dataDir,
        log: roomLogger('calls'),
        clock: { now: () => now.getTime() },
        batchSize: 1,
      });
      assert.equal(await job.runOnce(), 2);
      for (const r of [expired, deleted]) {
        assert.equal(existsSync(r.file), false);
        const row = await db('recordings').where({ id: r.id }).first();
        assert.equal(row.media_deleted_at, now.toISOString());
        assert.equal(Number(row.size_bytes), 1000, 'size stays truthful');
      }
      for (const r of [kept, forever]) {
        assert.ok(existsSync(r.file));
        assert.equal((await db('recordings').where({ id: r.id }).first()).media_deleted_at, null);
      }
      assert.equal(await job.runOnce(), 0, 'a second sweep finds nothing');
      await job.close();
    });

    it('never deletes a file outside the data directory, whatever a row says', async () => {
      const outside = path.join(mkdtempSync(path.join(os.tmpdir(), 'simu-outside-')), 'precious.wav');
      writeFileSync(outside, 'keep me');
      const r = await insertRecording(db, {
        account_id: acct.id,
        call_id: 'c-out',
        call_sid: 'call_out',
        storage_path: outside,
        expires_at: '2020-01-01T00:00:00.000Z',
      });
      const job = new RecordingRetention({
        db,
        dataDir,
        log: roomLogger('calls'),
        clock: { now: () => now.getTime() },
      });
      assert.equal(await job.runOnce(), 1);
      assert.ok(existsSync(outside));
      assert.ok((await db('recordings').where({ id: r.id }).first()).media_deleted_at);
    });

    it('an account retention override wins over the platform default; clearing it restores the default', async () => {
      assert.equal(await recordingRetentionDaysFor(db, acct.id, 90), 90);
      await updateAccount(db, acct.id, { recording_retention_days: 7 });
      assert.equal(await recordingRetentionDaysFor(db, acct.id, 90), 7);
      await updateAccount(db, acct.id, { recording_retention_days: null });
      assert.equal(await recordingRetentionDaysFor(db, acct.id, 30), 30);
    });
  });
