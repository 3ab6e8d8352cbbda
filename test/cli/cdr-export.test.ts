import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { runCli } from '../../cli/index.js';
import { csvField } from '../../cli/commands/cdr.js';
import { insertAccount, migrate, newId, openDb, type Db } from '../../store/index.js';
import { simu } from '../support/cli.js';

const ROWS = 5000;
const HOSTILE = '=HYPERLINK("http://x"),"a\nb"';

/** Splits RFC 4180 CSV text into records of fields (quoted fields may hold commas, quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '"' && text[i + 1] === '"') {
      field += '"';
      i++;
    } else if (quoted && c === '"') {
      quoted = false;
    } else if (quoted) {
      field += c;
    } else if (c === '"') {
      quoted = true;
    } else if (c === ',') {
      record.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i++;
    } else {
      field += c;
    }
  }
  return records;
}

describe('simu cdr export', function () {
  this.timeout(60000);
  let db: Db;
  const saved = process.env.SIMU_DATA_DIR;

  before(async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'simu-cdr-'));
    process.env.SIMU_DATA_DIR = dataDir;
    db = openDb({ databaseUrl: '', dataDir });
    await migrate(db);
    const a = await insertAccount(db, 'Exporter');
    const base = Date.parse('2026-11-01T00:00:00Z');
    const rows = Array.from({ length: ROWS }, (_, i) => ({
      id: newId(),
      sid: `call_${String(i).padStart(24, '0')}`,
      account_id: a.id,
      direction: i % 2 ? 'inbound' : 'outbound',
      from_number: i === 7 ? HOSTILE : '+254700000001',
      to_number: i === 9 ? '112' : '+254712345678',
      status: 'completed',
      cost_cents: i,
      emergency: i === 9,
      // Several rows share each instant: keyset pages must neither skip nor repeat them.
      created_at: new Date(base + Math.floor(i / 3) * 1000).toISOString(),
    }));
    await db.batchInsert('calls', rows, 200);
  });
  after(async () => {
    await db.destroy();
    if (saved === undefined) delete process.env.SIMU_DATA_DIR;
    else process.env.SIMU_DATA_DIR = saved;
  });

  it('csv: every row once, oldest first, properly quoted, with the emergency flag and money as a decimal', async () => {
    const r = await simu('cdr', 'export', '--from', '2026-11-01', '--to', '2026-12-01');
    assert.equal(r.code, 0, r.stderr);
    const [header, ...records] = parseCsv(r.stdout);
    assert.equal(header[0], 'uuid');
    assert.equal(records.length, ROWS);
    const col = (name: string) => header.indexOf(name);
    const sids = records.map((x) => x[col('sid')]);
    assert.equal(new Set(sids).size, ROWS, 'no row twice');
    const keys = records.map((x) => `${x[col('created_at')]} ${x[col('uuid')]}`);
    assert.deepEqual(keys, [...keys].sort(), 'ordered by (created_at, uuid), the keyset');
    const bySid = new Map(records.map((x) => [x[col('sid')], x]));
    const row = (i: number) => bySid.get(`call_${String(i).padStart(24, '0')}`)!;
    assert.equal(row(7)[col('from_number')], `'${HOSTILE}`, 'a formula is neutralised, quotes and newline kept');
    assert.equal(row(9)[col('emergency')], 'true');
    assert.equal(row(8)[col('emergency')], 'false');
    assert.equal(row(1234)[col('cost')], '12.34');
    assert.equal(row(0)[col('from_number')], '+254700000001', 'an E.164 number is left as it is');
  });

  it('jsonl and the [from, to) bounds', async () => {
    const r = await simu(
      'cdr',
      'export',
      '--from',
      '2026-11-01T00:00:01Z',
      '--to',
      '2026-11-01T00:00:03Z',
      '--format',
      'jsonl',
    );
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => l.sid.slice(-2)).sort(), ['03', '04', '05', '06', '07', '08']);
    assert.equal(lines.find((l) => l.sid.endsWith('07')).from_number, HOSTILE, 'JSON carries the value as it is');
  });

  it('waits for a slow reader instead of buffering the whole export', async () => {
    let maxBuffered = 0;
    let bytes = 0;
    const slow = new Writable({
      highWaterMark: 64 * 1024,
      write(chunk, _enc, cb) {
        bytes += chunk.length;
        maxBuffered = Math.max(maxBuffered, slow.writableLength);
        setTimeout(cb, 5);
      },
    });
    const err = new Writable({ write: (_c, _e, cb) => cb() });
    const code = await runCli(['cdr', 'export', '--from', '2026-11-01'], { stdout: slow, stderr: err });
    assert.equal(code, 0);
    assert.ok(bytes > 900_000, `the whole export was written (${bytes} bytes)`);
    assert.ok(maxBuffered < bytes / 2, `at most about a page waited in memory (${maxBuffered} of ${bytes} bytes)`);
  });

  it('refuses bad bounds and formats', async () => {
    for (const [argv, pattern] of [
      [['--from', 'yesterday'], /--from takes a date/],
      [['--from', '2026-11-02', '--to', '2026-11-01'], /--from must be before --to/],
      [['--from', '2026-11-01', '--format', 'xml'], /--format is csv or jsonl/],
    ] as Array<[string[], RegExp]>) {
      const r = await simu('cdr', 'export', ...argv);
      assert.equal(r.code, 2);
      assert.match(r.stderr, pattern);
    }
  });

  it('csvField quotes what RFC 4180 says and neutralises formulas', () => {
    assert.equal(csvField('a,b'), '"a,b"');
    assert.equal(csvField('say "hi"'), '"say ""hi"""');
    assert.equal(csvField('+254712345678'), '+254712345678');
    assert.equal(csvField('-1'), '-1');
    assert.equal(csvField('+cmd'), "'+cmd");
    assert.equal(csvField('@SUM(A1)'), "'@SUM(A1)");
    assert.equal(csvField(null), '');
  });
});
