import assert from 'node:assert/strict';
import {
  RateBook,
  RateCard,
  RateNotFoundError,
  billableSeconds,
  talkCents,
  destinationDigits,
} from '../../billing/index.js';
import { setRate, type Db, type RateRow } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';

const row = (kind: RateRow['kind'], amount_cents: number, prefix = '', tier = ''): RateRow => ({
  id: `${kind}-${prefix}-${tier}`,
  kind,
  prefix,
  tier,
  amount_cents,
  created_at: '2026-01-01T00:00:00.000Z',
});

describe('rating', () => {
  const card = new RateCard([
    row('outbound', 500),
    row('outbound', 120, '254'),
    row('outbound', 90, '2547'),
    row('outbound', 300, '25477'),
    row('inbound', 30),
    row('tts', 2),
    row('tts', 7, '', 'premium'),
    row('did_setup', 10000),
  ]);

  it('picks the longest matching outbound prefix, whatever the destination is written as', () => {
    assert.equal(card.perMinute('outbound', '+254 771 000 001'), 300);
    assert.equal(card.perMinute('outbound', 'sip:+254712345678@carrier.example'), 90);
    assert.equal(card.perMinute('outbound', '254201234567'), 120);
    assert.equal(card.perMinute('outbound', '+14155550100'), 500, 'the catch-all prefix');
    assert.equal(destinationDigits('tel:+254-700'), '254700');
  });

  it('refuses an outbound destination no prefix covers instead of carrying it free', () => {
    const narrow = new RateCard([row('outbound', 120, '254')]);
    assert.throws(() => narrow.perMinute('outbound', '+441234'), RateNotFoundError);
  });

  it('rates inbound per minute and internal free unless priced', () => {
    assert.equal(card.perMinute('inbound', 'x'), 30);
    assert.equal(card.perMinute('internal', '1001'), 0);
    assert.equal(new RateCard([row('internal', 6)]).perMinute('internal', '1001'), 6);
    assert.equal(card.didSetupCents(), 10000);
  });

  it('bills the first block whole, then whole increments, rounding cents up', () => {
    const i60x1 = { initialSeconds: 60, incrementSeconds: 1 };
    const i30x6 = { initialSeconds: 30, incrementSeconds: 6 };
    assert.equal(billableSeconds(0, i60x1), 0);
    assert.equal(billableSeconds(1, i60x1), 60);
    assert.equal(billableSeconds(60, i60x1), 60);
    assert.equal(billableSeconds(61, i60x1), 61);
    assert.equal(billableSeconds(31, i30x6), 36);
    assert.equal(billableSeconds(36, i30x6), 36);
    assert.equal(billableSeconds(37, i30x6), 42);
    assert.equal(talkCents(100, 61, i60x1), 102, '61 s at 1.00/min is 101.67 cents, rounded up');
    assert.equal(talkCents(120, 10, i60x1), 120);
    assert.deepEqual(card.rateCall({ direction: 'outbound', to: '+2547123', talkSeconds: 90, ttsSeconds: 0 }), {
      talkCents: 135,
      ttsCents: 0,
    });
  });

  it('prices speech per started second by tier, the default tier from the tier-less rate', () => {
    const r = (tier: string, s: number) =>
      card.rateCall({ direction: 'internal', to: '1', talkSeconds: 0, ttsSeconds: s, tier }).ttsCents;
    assert.equal(r('', 10), 20);
    assert.equal(r('standard', 10), 20);
    assert.equal(r('premium', 10), 70);
    assert.equal(r('premium', 2.1), 21, 'a started second counts');
    assert.equal(r('unknown-tier', 3), 6, 'an unpriced tier costs the default tier');
  });

  describe('RateBook', () => {
    let db: Db;
    before(async () => (db = await sqliteDb.open()));
    after(async () => db?.destroy());

    it('sees an operator rate change after its short TTL, or at once when invalidated', async () => {
      let now = 0;
      const book = new RateBook(db, { ttlMs: 5000, clock: { now: () => now } });
      await setRate(db, 'outbound', 100, '254');
      assert.equal((await book.card()).perMinute('outbound', '254700'), 100);
      await setRate(db, 'outbound', 150, '254');
      now = 4000;
      assert.equal((await book.card()).perMinute('outbound', '254700'), 100, 'cached within the TTL');
      now = 5001;
      assert.equal((await book.card()).perMinute('outbound', '254700'), 150);
      await setRate(db, 'outbound', 175, '254');
      book.invalidate();
      assert.equal((await book.card()).perMinute('outbound', '254700'), 175);
    });
  });
});
