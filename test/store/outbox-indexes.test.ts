import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import {
  Uuid7Generator,
  countCallEvents,
  countOutboxBacklog,
  dueOutboxRows,
  insertOutboxRows,
  leaseOutboxRows,
  listCallEvents,
  listCallWebhooks,
  markOutboxRowsDelivered,
  migrate,
  outboxRowsNotSendable,
  purgeFinishedOutboxRows,
  releaseOutboxLeases,
  updateOutboxRow,
  webhookFailureSeries,
  type Db,
  type NewOutboxRow,
} from '../../store/index.js';
import { migrationSource } from '../../store/migrations/index.js';
import { BOTH_DBS } from '../support/db.js';

const ids = new Uuid7Generator();
const T0 = '2024-01-01T00:00:00.000Z';

function row(accountId: string, callId: string | null, extra: Partial<NewOutboxRow> = {}): NewOutboxRow {
  return {
    id: ids.next(),
    account_id: accountId,
    call_id: callId,
    event: 'call.ringing',
    route: 'status',
    url: 'https://hooks.example/status',
    body: JSON.stringify({ pad: 'x'.repeat(900) }),
    attempts: 0,
    next_attempt_at: T0,
    leased_by: null,
    state: 'pending',
    last_error: null,
    created_at: T0,
    done_at: null,
    ...extra,
  };
}

/** The key columns of each index of event_outbox, and whether it covers only some rows. */
async function outboxIndexes(db: Db, kind: string): Promise<Array<{ name: string; keys: string[]; partial: boolean }>> {
  if (kind === 'sqlite') {
    const list = (await db.raw(`pragma index_list('event_outbox')`)) as Array<{ name: string; partial: number }>;
    const out = [];
    for (const ix of list) {
      const cols = (await db.raw(`pragma index_info('${ix.name}')`)) as Array<{ name: string }>;
      out.push({ name: ix.name, keys: cols.map((c) => c.name), partial: ix.partial === 1 });
    }
    return out;
  }
  const r = await db.raw(`select indexname, indexdef from pg_indexes where tablename = 'event_outbox'`);
  return (r.rows as Array<{ indexname: string; indexdef: string }>).map((x) => ({
    name: x.indexname,
    keys: /\(([^)]*)\)/
      .exec(x.indexdef)![1]!
      .split(',')
      .map((c) => c.trim().replace(/"/g, '')),
    partial: / WHERE /.test(x.indexdef),
  }));
}

/**
 * The outbox's indexes never hold `state` as a key, so marking a row delivered moves no index entry (it only leaves
 * the pending rows' partial index); every statement the outbox and its readers run still reads through an index.
 */
for (const kind of BOTH_DBS) {
  describe(`store: the outbox's indexes on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    it('no index keys on state; due rows and failed rows are indexed over those rows only', async () => {
      const ixs = await outboxIndexes(db, kind.name);
      for (const ix of ixs) assert.ok(!ix.keys.includes('state'), `${ix.name} keys on state: ${ix.keys.join(', ')}`);
      const byKeys = (keys: string) => ixs.find((ix) => ix.keys.join(',') === keys);
      assert.equal(byKeys('next_attempt_at')?.partial, true, 'due rows: pending only');
      assert.equal(byKeys('done_at')?.partial, true, 'failed rows: failed only');
      assert.equal(byKeys('call_id,id')?.partial, false, "a call's rows, all of them");
    });

    it('every statement of the outbox and its readers reads through an index', async () => {
      const accountId = randomUUID();
      const callId = ids.next();
      const rows = [row(accountId, callId), row(accountId, callId), row(accountId, null, { leased_by: 'n1' })];
      await insertOutboxRows(db, rows);
      const seen: Array<{ sql: string; bindings: Knex.RawBinding[] }> = [];
      const listen = (q: { sql: string; bindings?: Knex.RawBinding[] }) =>
        seen.push({ sql: q.sql, bindings: q.bindings ?? [] });
      db.on('query', listen);
      try {
        const now = new Date().toISOString();
        await dueOutboxRows(db, now, [], 10);
        await dueOutboxRows(db, now, [randomUUID()], 10);
        await leaseOutboxRows(db, [rows[0]!.id], now, now, 'n1');
        await outboxRowsNotSendable(db, [rows[1]!.id], 'n1');
        await releaseOutboxLeases(db, 'n1', now, [rows[2]!.id]);
        await releaseOutboxLeases(db, 'n1', now);
        await markOutboxRowsDelivered(db, [{ id: rows[0]!.id, attempts: 1, status: 200 }], now);
        await updateOutboxRow(db, rows[1]!.id, { attempts: 1, next_attempt_at: now });
        await countOutboxBacklog(db);
        await listCallEvents(db, accountId, callId);
        await countCallEvents(db, accountId, callId);
        await listCallWebhooks(db, accountId, callId);
        await webhookFailureSeries(db, { accountId, from: T0, to: now, bucket: 'hour' });
        await webhookFailureSeries(db, { accountId: null, from: T0, to: now, bucket: 'day' });
        await purgeFinishedOutboxRows(db, T0);
      } finally {
        db.off('query', listen);
      }
      const statements = seen.filter((s) => s.sql.includes('"event_outbox"') && !/^\s*insert/i.test(s.sql));
      assert.ok(statements.length >= 14, `statements seen: ${statements.length}`);
      for (const { sql, bindings } of statements) {
        if (kind.name === 'sqlite') {
          const plan = (await db.raw(`explain query plan ${sql}`, bindings)) as Array<{ detail: string }>;
          // A scan is allowed only over the pending rows' own index (the backlog count, a node's leases).
          const scans = plan.filter(
            (p) => /^SCAN (?!CONSTANT ROW)/.test(p.detail) && !/INDEX event_outbox_due$/.test(p.detail),
          );
          assert.deepEqual(
            scans.map((p) => p.detail),
            [],
            `${sql}\n${plan.map((p) => p.detail).join('\n')}`,
          );
        } else {
          // With sequential scans priced out, a plan still holding one has no index to use.
          const plan = await db.transaction(async (trx) => {
            await trx.raw('set local enable_seqscan = off');
            return (await trx.raw(`explain ${sql}`, bindings)).rows as Array<{ 'QUERY PLAN': string }>;
          });
          const text = plan.map((p) => p['QUERY PLAN']).join('\n');
          assert.ok(!/Seq Scan on event_outbox/.test(text), `${sql}\n${text}`);
        }
      }
    });

    it('migration 043 keeps the rows; a pending one is still due, and down and up again work', async () => {
      const accountId = randomUUID();
      const before = row(accountId, ids.next());
      await db.migrate.down({ migrationSource });
      await db('event_outbox').insert(before);
      await migrate(db);
      const due = await dueOutboxRows(db, new Date().toISOString(), [], 100);
      assert.ok(
        due.some((r) => r.id === before.id),
        'the row queued before the migration is due after it',
      );
      await db.migrate.down({ migrationSource });
      assert.equal((await db('event_outbox').where({ id: before.id }).first())?.state, 'pending');
      await migrate(db);
      assert.ok(
        (await outboxIndexes(db, kind.name)).some((ix) => ix.keys.join(',') === 'call_id,id'),
        'index back',
      );
    });

    it('purge reads finished rows by id range: a row finished before the cut-off goes, a pending one stays', async () => {
      const accountId = randomUUID();
      const old = new Uuid7Generator(() => Date.parse(T0) - 60_000);
      const done = { ...row(accountId, null), id: old.next(), state: 'delivered' as const, done_at: T0 };
      const pending = { ...row(accountId, null), id: old.next() };
      await insertOutboxRows(db, [done, pending]);
      const cut = new Date(Date.parse(T0) + 1).toISOString();
      assert.equal(await purgeFinishedOutboxRows(db, cut), 1);
      assert.deepEqual(
        (await db('event_outbox').whereIn('id', [done.id, pending.id]).select('id')).map((r) => r.id),
        [pending.id],
      );
    });
  });
}
