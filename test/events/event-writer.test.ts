import assert from 'node:assert/strict';
import { EventWriter, type EventWrite } from '../../events/event-writer.js';
import {
  disableWebhookRoute,
  insertAccount,
  insertCall,
  listCallEvents,
  noteRouteFailed,
  type Db,
} from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';

/** The publisher's group commit: events written together, in order, each caller told only once it is stored. */
for (const kind of BOTH_DBS) {
  describe(`events: group commit of events on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    let accountId: string;
    let callId: string;
    let statements: string[];
    before(async () => {
      db = await kind.open();
      accountId = (await insertAccount(db, 'writer')).id;
      callId = (await insertCall(db, { account_id: accountId, direction: 'inbound', from_number: 'a', to_number: 'b' }))
        .id;
      db.on('query', (q: { sql: string }) => statements.push(q.sql));
    });
    after(async () => db?.destroy());
    beforeEach(() => (statements = []));

    let seq = 0;
    const ev = (code: string, over: Partial<EventWrite['event']> = {}): EventWrite['event'] => {
      seq++;
      return {
        id: `00000000-0000-7000-8000-${String(seq).padStart(12, '0')}`,
        account_id: accountId,
        call_id: callId,
        code,
        event: 'call.ringing',
        data: JSON.stringify({ n: seq }),
        created_at: new Date(Date.UTC(2025, 0, 1, 0, 0, 0, seq)).toISOString(),
        ...over,
      };
    };
    const begins = () => statements.filter((s) => /^(BEGIN|begin)/.test(s.trim())).length;

    it('writes events emitted together in one INSERT, without a transaction around it, in the order given', async () => {
      const writer = new EventWriter(db);
      const writes = Array.from({ length: 40 }, (_, i) => ev(`T.${i}`));
      const results = await Promise.all(writes.map((event) => writer.write({ event })));
      assert.deepEqual(new Set(results), new Set(['none']));
      // One statement is atomic by itself: a BEGIN and a COMMIT would be two more round trips on PostgreSQL.
      assert.deepEqual(
        statements.map((s) => s.trim().split(' ')[0]!.toLowerCase()),
        ['insert'],
        `one INSERT for 40 events, saw: ${statements.join(' | ')}`,
      );
      const stored = (await listCallEvents(db, accountId, callId)).filter((r) => r.code.startsWith('T.'));
      assert.deepEqual(
        stored.map((r) => r.code),
        writes.map((w) => w.code),
      );
    });

    it('a caller is answered only after its event is stored', async () => {
      const writer = new EventWriter(db);
      const event = ev('S.1');
      await writer.write({ event });
      const stored = await listCallEvents(db, accountId, callId);
      assert.ok(stored.some((r) => r.code === 'S.1'));
    });

    it('one bad event fails alone; the others of its batch are stored', async () => {
      const writer = new EventWriter(db);
      const dup = ev('B.dup');
      await writer.write({ event: dup });
      const good = [ev('B.1'), ev('B.2')];
      const outcomes = await Promise.allSettled([
        writer.write({ event: good[0]! }),
        writer.write({ event: { ...dup, code: 'B.again' } }), // same primary key: refused by the store
        writer.write({ event: good[1]! }),
      ]);
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ['fulfilled', 'rejected', 'fulfilled'],
      );
      const codes = (await listCallEvents(db, accountId, callId)).map((r) => r.code);
      assert.ok(codes.includes('B.1') && codes.includes('B.2'));
      assert.ok(!codes.includes('B.again'));
    });

    it('queues status callbacks with the events, and records a disabled route as failed, not sent', async () => {
      const writer = new EventWriter(db);
      const at = new Date().toISOString();
      const off = { route: 'status', url: 'https://off.example/' };
      await noteRouteFailed(db, accountId, off, at);
      await disableWebhookRoute(db, accountId, off, at);
      const [a, b] = await Promise.all([
        writer.write({ event: ev('C.1'), callback: { route: 'status', url: 'https://on.example/', body: '{}' } }),
        writer.write({ event: ev('C.2'), callback: { ...off, body: '{}' } }),
      ]);
      assert.equal(a, 'queued');
      assert.equal(b, 'route_disabled');
      assert.equal(begins(), 1);
    });

    it('flushed() waits for writes handed over but not yet stored', async () => {
      const writer = new EventWriter(db);
      const pending = writer.write({ event: ev('F.1') });
      await writer.flushed();
      const codes = (await listCallEvents(db, accountId, callId)).map((r) => r.code);
      assert.ok(codes.includes('F.1'));
      await pending;
    });
  });
}
