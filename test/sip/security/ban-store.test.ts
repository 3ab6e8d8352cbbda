import assert from 'node:assert/strict';
import type { Db } from '../../../store/index.js';
import { addBan, knexBanStore, liftBan, listBans, type BanRecord, type BanStore } from '../../../sip/security/index.js';
import { BOTH_DBS } from '../../support/db.js';
import { ManualClock } from '../../../kit/index.js';
import { SECURITY_EPOCH, makeGate, req } from './helpers.js';

const floodSettings = { flood: { maxRequests: 3, banSeconds: 600 } };

function flood(gate: { inspect: (r: ReturnType<typeof req>) => string }, source: string): void {
  for (let i = 0; i < 4; i++) gate.inspect(req(source));
}

for (const kind of BOTH_DBS) {
  describe(`sip/security: bans persisted in ip_bans, listed and lifted by the operator (${kind.name})`, () => {
    let db: Db;
    beforeEach(async () => {
      db = await kind.open();
    });
    afterEach(async () => {
      await db.destroy();
    });

    it('a flood ban is written to the table with its reason, times and (after a sync) its hit count', async () => {
      const clock = new ManualClock(SECURITY_EPOCH);
      const { gate } = makeGate({ clock, store: knexBanStore(db), settings: floodSettings });
      flood(gate, '192.0.2.40');
      for (let i = 0; i < 5; i++) gate.inspect(req('192.0.2.40'));
      await gate.flushBanWrites();
      await gate.syncBans();
      const rows = await listBans(db, { now: new Date(clock.now()) });
      assert.equal(rows.length, 1);
      assert.equal(rows[0].address, '192.0.2.40');
      assert.equal(rows[0].reason, 'flood');
      assert.equal(rows[0].banned_at, new Date(clock.now()).toISOString());
      assert.equal(Date.parse(rows[0].expires_at) - Date.parse(rows[0].banned_at), 600_000);
      assert.equal(rows[0].hits, 5);
      await gate.close();
    });

    it('liftBan by the CLI lets the source back in at the next poll, without a restart', async () => {
      const clock = new ManualClock(SECURITY_EPOCH);
      const { gate } = makeGate({ clock, store: knexBanStore(db), settings: { ...floodSettings, pollSeconds: 3 } });
      flood(gate, '192.0.2.41');
      await gate.flushBanWrites();
      assert.equal(gate.inspect(req('192.0.2.41')), 'drop');

      assert.equal(await liftBan(db, '192.0.2.41'), true);
      assert.equal(await liftBan(db, '192.0.2.41'), false, 'nothing left to lift');
      assert.equal(gate.inspect(req('192.0.2.41')), 'drop', 'the switch has not polled yet');
      clock.advance(3_000); // the poll timer fires
      await gate.syncBans(); // joins the poll's run
      assert.equal(gate.inspect(req('192.0.2.41')), 'allow');
      assert.equal(gate.stats().bansLiftedByOperator, 1);
      await gate.close();
    });

    it('a ban added by the operator (or another node) is taken in at the next poll', async () => {
      const clock = new ManualClock(SECURITY_EPOCH);
      const { gate } = makeGate({ clock, store: knexBanStore(db) });
      await addBan(db, { address: '192.0.2.42', seconds: 60, now: new Date(clock.now()) });
      assert.equal(gate.inspect(req('192.0.2.42')), 'allow');
      await gate.syncBans();
      assert.equal(gate.inspect(req('192.0.2.42')), 'drop');
      assert.equal(gate.bans()[0].reason, 'operator');
      clock.advance(60_000);
      assert.equal(gate.inspect(req('192.0.2.42')), 'allow', 'operator bans end too');
      await gate.close();
    });

    it('bans survive a restart: a new gate loads them at its first sync', async () => {
      const clock = new ManualClock(SECURITY_EPOCH);
      const first = makeGate({ clock, store: knexBanStore(db), settings: floodSettings }).gate;
      flood(first, '192.0.2.43');
      await first.close();
      const { gate } = makeGate({ clock, store: knexBanStore(db) });
      await gate.syncBans();
      assert.equal(gate.inspect(req('192.0.2.43')), 'drop');
      await gate.close();
    });

    it('listBans hides ended bans unless asked, and the poll purges rows ended long ago', async () => {
      const clock = new ManualClock(SECURITY_EPOCH);
      const now = new Date(clock.now());
      await addBan(db, { address: '192.0.2.44', seconds: 10, now });
      await addBan(db, { address: '2001:db8::1', seconds: 3600, reason: 'flood', now });
      clock.advance(20_000);
      const later = new Date(clock.now());
      assert.deepEqual(
        (await listBans(db, { now: later })).map((r) => r.address),
        ['2001:db8::1'],
      );
      assert.equal((await listBans(db, { now: later, includeExpired: true })).length, 2);
      const { gate } = makeGate({ clock, store: knexBanStore(db), settings: { keepEndedBansSeconds: 5 } });
      await gate.syncBans();
      assert.equal((await listBans(db, { now: later, includeExpired: true })).length, 1);
      await gate.close();
    });

    it('operator input is checked: liftBan and addBan refuse what is not an IP address', async () => {
      await assert.rejects(
        () => liftBan(db, 'example.com'),
        (e: any) => e.code === 'SECURITY_BAD_ADDRESS',
      );
      await assert.rejects(() => addBan(db, { address: '1.2.3', seconds: 5 }), /not an IP address/);
      await assert.rejects(() => addBan(db, { address: '1.2.3.4', seconds: 0 }), /positive/);
      assert.equal(await liftBan(db, ' ::ffff:192.0.2.45 '), false);
    });
  });
}

/** A store whose writes the test releases by hand, to put a poll between a ban and its write. */
class SlowStore implements BanStore {
  rows = new Map<string, BanRecord>();
  gates: Array<() => void> = [];
  add(ban: BanRecord): Promise<void> {
    return new Promise((resolve) =>
      this.gates.push(() => {
        this.rows.set(ban.address, { ...ban });
        resolve();
      }),
    );
  }
  async active(now: number): Promise<BanRecord[]> {
    return [...this.rows.values()].filter((r) => r.expiresAt > now);
  }
  async setHits(address: string, hits: number): Promise<void> {
    const r = this.rows.get(address);
    if (r) r.hits = hits;
  }
  async purgeBefore(): Promise<number> {
    return 0;
  }
}

describe('sip/security: ban sync races', () => {
  it('a poll that reads before a new ban is written does not mistake it for a lift', async () => {
    const store = new SlowStore();
    const { gate } = makeGate({ store, settings: floodSettings });
    flood(gate, '192.0.2.50');
    await gate.syncBans(); // the write is still pending
    assert.equal(gate.inspect(req('192.0.2.50')), 'drop');
    store.gates.shift()!();
    await gate.flushBanWrites();
    await gate.syncBans();
    assert.equal(store.rows.get('192.0.2.50')?.hits, 1, 'the hit counted while the write was pending');
    assert.equal(gate.inspect(req('192.0.2.50')), 'drop', 'still banned once written');
    store.rows.delete('192.0.2.50'); // the operator lifts it
    await gate.syncBans();
    assert.equal(gate.inspect(req('192.0.2.50')), 'allow');
    await gate.close();
  });

  it('a store that fails keeps the bans in memory', async () => {
    const failing: BanStore = {
      add: async () => {
        throw new Error('disk full');
      },
      active: async () => {
        throw new Error('disk full');
      },
      setHits: async () => {},
      purgeBefore: async () => 0,
    };
    const { gate } = makeGate({ store: failing, settings: floodSettings });
    flood(gate, '192.0.2.51');
    await gate.flushBanWrites();
    await gate.syncBans();
    assert.equal(gate.inspect(req('192.0.2.51')), 'drop');
    await gate.close();
  });
});
