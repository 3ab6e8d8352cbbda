import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { reconcileTopups } from '../../billing/index.js';
import { getAccount, setTopupProvider, type Db } from '../../store/index.js';
import { cliDataDir, simu } from '../support/cli.js';
import { BOTH_DBS } from '../support/db.js';
import { ApiHarness, type Reply } from './harness.js';

const PATH = '/api/wallet/topups/callback';

/**
 * Plays a mobile-money provider: builds a payment confirmation or reversal, signs its exact bytes with the
 * provider's secret (HMAC-SHA256, `X-Topup-Signature: sha256=<hex>`) and posts it to the switch.
 */
class MobileMoneySimulator {
  constructor(
    readonly h: ApiHarness,
    readonly name: string,
    readonly secret: string,
  ) {}

  payment(accountId: string, receipt: string, amount: string, extra: Record<string, unknown> = {}) {
    return {
      type: 'payment',
      receipt,
      amount,
      currency: 'KES',
      msisdn: '254712345678',
      account_reference: accountId,
      timestamp: new Date().toISOString(),
      ...extra,
    };
  }

  reversal(originalReceipt: string, receipt: string, amount: string) {
    return {
      type: 'reversal',
      receipt,
      original_receipt: originalReceipt,
      amount,
      currency: 'KES',
      msisdn: '254712345678',
      timestamp: new Date().toISOString(),
    };
  }

  sign(raw: string, secret = this.secret): string {
    return `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;
  }

  send(body: unknown, opts: { secret?: string; provider?: string; tamper?: (raw: string) => string } = {}) {
    const raw = JSON.stringify(body);
    const signature = this.sign(raw, opts.secret);
    return this.h.req('POST', PATH, {
      raw: opts.tamper ? opts.tamper(raw) : raw,
      headers: { 'x-topup-provider': opts.provider ?? this.name, 'x-topup-signature': signature },
    });
  }
}

const receipt = (): string => `QK${randomUUID().replace(/-/g, '').slice(0, 8).toUpperCase()}`;

for (const kind of BOTH_DBS) {
  describe(`mobile-money top-up callbacks on ${kind.name}`, function () {
    this.timeout(60000);
    let h: ApiHarness;
    let mm: MobileMoneySimulator;
    before(async () => {
      h = await ApiHarness.start(kind);
      mm = new MobileMoneySimulator(h, 'mpesa', 'provider-secret-0123456789abcdef');
      await setTopupProvider(h.db, mm.name, mm.secret);
    });
    after(async () => h?.stop());

    const balance = async (id: string) => (await getAccount(h.db, id)).balance_cents;
    const written = async (accountId: string) => ({
      ledger: (await h.db('wallet_transactions').where({ account_id: accountId })).length,
      topups: (await h.db('wallet_topups').where({ account_id: accountId })).length,
    });

    it('a payment credits the account, and the same receipt sent 20 times at once credits it once', async () => {
      const t = await h.tenant('Payer', 0);
      const r = receipt();
      const body = mm.payment(t.accountId, r, '1200.50');
      const first = await mm.send(body);
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.result, 'credited');
      const again: Reply[] = await Promise.all(Array.from({ length: 20 }, () => mm.send(body)));
      assert.deepEqual(new Set(again.map((x) => x.status)), new Set([200]), again.map((x) => x.text).join());
      assert.ok(again.every((x) => x.body.result === 'duplicate'));
      assert.equal(await balance(t.accountId), 120050);
      const rows = await h.db('wallet_transactions').where({ account_id: t.accountId });
      assert.equal(rows.length, 1);
      assert.equal(rows[0].settlement_key, `mm:mpesa:${r}`);
      assert.equal(rows[0].kind, 'topup');
      assert.equal(first.body.transaction_uuid, rows[0].id);
      const topup = await h.db('wallet_topups').where({ account_id: t.accountId }).first();
      assert.equal(topup.receipt, r);
      assert.equal(topup.msisdn, '254712345678');
      assert.equal(Number(topup.amount_cents), 120050);
    });

    it('first deliveries racing each other (new receipts, 20 at once) credit once each', async () => {
      const t = await h.tenant('Racer', 0);
      const r = receipt();
      const body = mm.payment(t.accountId, r, '10.00');
      const replies = await Promise.all(Array.from({ length: 20 }, () => mm.send(body)));
      assert.equal(replies.filter((x) => x.body?.result === 'credited').length, 1, replies.map((x) => x.text).join());
      assert.equal(replies.filter((x) => x.body?.result === 'duplicate').length, 19);
      assert.equal(await balance(t.accountId), 1000);
      assert.deepEqual(await written(t.accountId), { ledger: 1, topups: 1 });
    });

    it('a reversal debits the payment once, even delivered 10 times at once', async () => {
      const t = await h.tenant('Reversed', 5000);
      const r = receipt();
      assert.equal((await mm.send(mm.payment(t.accountId, r, '300.00'))).status, 200);
      assert.equal(await balance(t.accountId), 35000);
      const rev = mm.reversal(r, receipt(), '300.00');
      const replies = await Promise.all(Array.from({ length: 10 }, () => mm.send(rev)));
      assert.equal(replies.filter((x) => x.body?.result === 'reversed').length, 1, replies.map((x) => x.text).join());
      assert.equal(replies.filter((x) => x.body?.result === 'duplicate').length, 9);
      assert.equal(await balance(t.accountId), 5000);
      const debit = await h.db('wallet_transactions').where({ settlement_key: `mm:mpesa:${r}:reversal` });
      assert.equal(debit.length, 1);
      assert.equal(debit[0].direction, 'debit');
    });

    it("the transactions list shows the provider's receipt on a top-up and on its reversal; other rows none", async () => {
      const t = await h.tenant('Receipts', 5000); // a credit posted without a provider
      const r = receipt();
      const own = receipt();
      assert.equal((await mm.send(mm.payment(t.accountId, r, '300.00'))).status, 200);
      assert.equal((await mm.send(mm.reversal(r, own, '300.00'))).status, 200);
      const list = await h.req('GET', '/api/wallet/transactions', { key: t.key });
      assert.equal(list.status, 200, list.text);
      const seen = list.body.map((x: Record<string, unknown>) => [
        x.kind,
        x.direction,
        x.amount,
        x.provider,
        x.receipt,
        x.reference,
      ]);
      assert.deepEqual(seen, [
        ['adjustment', 'debit', '300.00', 'mpesa', r, own],
        ['topup', 'credit', '300.00', 'mpesa', r, null],
        ['topup', 'credit', '50.00', null, null, null],
      ]);
    });

    it('a reversal of a spent payment takes the balance to zero, never below, and says what it recovered', async () => {
      const t = await h.tenant('Spender', 0);
      const r = receipt();
      await mm.send(mm.payment(t.accountId, r, '100.00'));
      await h.db('accounts').where({ id: t.accountId }).update({ balance_cents: 0 }); // (spent: simplest form)
      assert.equal((await mm.send(mm.reversal(r, receipt(), '100.00'))).status, 200);
      assert.equal(await balance(t.accountId), 0);
      const row = await h.db('wallet_topups').where({ receipt: r, kind: 'reversal' }).first();
      assert.equal(Number(row.amount_cents), 10000);
      assert.equal(Number(row.posted_cents), 0);
    });

    it('refuses a bad signature, a wrong secret, an unknown provider, a tampered body and a stale timestamp, writing nothing', async () => {
      const t = await h.tenant('Target', 700);
      const body = mm.payment(t.accountId, receipt(), '5000.00');
      const cases: Array<[string, Promise<Reply>]> = [
        ['wrong secret', mm.send(body, { secret: 'not-the-providers-secret-000000' })],
        ['unknown provider', mm.send(body, { provider: 'airtel' })],
        ['tampered amount', mm.send(body, { tamper: (raw) => raw.replace('5000.00', '9000.00') })],
        ['no signature', h.req('POST', PATH, { raw: JSON.stringify(body), headers: { 'x-topup-provider': mm.name } })],
        ['stale timestamp', mm.send({ ...body, timestamp: new Date(Date.now() - 3600_000).toISOString() })],
      ];
      for (const [what, p] of cases) {
        const r = await p;
        assert.equal(r.status, 401, `${what}: ${r.text}`);
        assert.match(r.body.code, /^TOPUP_(SIGNATURE_INVALID|STALE)$/, what);
      }
      assert.equal(await balance(t.accountId), 700);
      assert.deepEqual(await written(t.accountId), { ledger: 1, topups: 0 }); // the tenant's opening top-up only
    });

    it('refuses a reversal of an unknown receipt, another currency and an unknown account, writing nothing', async () => {
      const t = await h.tenant('Careful', 700);
      const before = await h.db('wallet_topups').count('* as n').first();
      const r1 = await mm.send(mm.reversal('NOSUCH0001', receipt(), '10.00'));
      assert.equal(r1.status, 404);
      assert.equal(r1.body.code, 'TOPUP_UNKNOWN_RECEIPT');
      const r2 = await mm.send(mm.payment(t.accountId, receipt(), '10.00', { currency: 'UGX' }));
      assert.equal(r2.status, 422);
      const r3 = await mm.send(mm.payment(randomUUID(), receipt(), '10.00'));
      assert.equal(r3.status, 404);
      assert.equal(r3.body.code, 'TOPUP_UNKNOWN_ACCOUNT');
      assert.deepEqual(await h.db('wallet_topups').count('* as n').first(), before);
      assert.equal(await balance(t.accountId), 700);
    });

    it('the reconcile report balances to the ledger, and names a ledger row no callback explains', async () => {
      const from = new Date(Date.now() - 1000).toISOString();
      const t = await h.tenant('Reconciled', 0);
      const r = receipt();
      await mm.send(mm.payment(t.accountId, r, '50.00'));
      await mm.send(mm.payment(t.accountId, receipt(), '25.25'));
      await mm.send(mm.reversal(r, receipt(), '50.00'));
      const to = new Date(Date.now() + 1000).toISOString();
      const ok = await reconcileTopups(h.db, from, to);
      assert.equal(ok.balanced, true, JSON.stringify(ok.mismatches));
      const mine = ok.providers.find((p) => p.provider === 'mpesa')!;
      assert.ok(mine.payments >= 2 && mine.reversals >= 1);
      assert.equal(mine.netCents, ok.ledger.creditCents - ok.ledger.debitCents);
      // A credit posted under a callback's key that no callback recorded: the report must not balance.
      await h.db('wallet_transactions').insert({
        id: randomUUID(),
        account_id: t.accountId,
        direction: 'credit',
        kind: 'topup',
        amount_cents: 999,
        balance_before_cents: 2525,
        settlement_key: 'mm:mpesa:FORGED0001',
        created_at: new Date().toISOString(),
        seq: 99,
      });
      const bad = await reconcileTopups(h.db, from, to);
      assert.equal(bad.balanced, false);
      assert.deepEqual(
        bad.mismatches.map((m) => [m.key, m.problem]),
        [['mm:mpesa:FORGED0001', 'no top-up record']],
      );
    });
  });
}

describe('simu wallet provider / reconcile', function () {
  this.timeout(30000);
  let db: Db;
  cliDataDir('simu-topup-cli-', (d) => (db = d));

  it('sets a provider from an environment variable, lists it without its secret, and reconciles an empty window', async () => {
    process.env.TEST_MM_SECRET = 'a-secret-of-enough-length-123';
    const set = await simu('wallet', 'provider', 'set', 'mpesa', '--secret-env', 'TEST_MM_SECRET', '--json');
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout), { name: 'mpesa' });
    assert.equal((await db('topup_providers').where({ name: 'mpesa' }).first()).secret, process.env.TEST_MM_SECRET);
    const list = await simu('wallet', 'provider', 'list');
    assert.match(list.stdout, /mpesa/);
    assert.doesNotMatch(list.stdout, /a-secret-of-enough-length/);
    const made = await simu('wallet', 'provider', 'set', 'airtel', '--json');
    assert.ok(JSON.parse(made.stdout).secret.length >= 32);
    const rec = await simu('wallet', 'reconcile', '--from', '2026-01-01', '--json');
    assert.equal(rec.code, 0, rec.stderr);
    assert.equal(JSON.parse(rec.stdout).balanced, true);
    assert.equal((await simu('wallet', 'provider', 'set', 'Bad Name')).code, 2);
  });
});

describe('GET/POST /api/account/prepaid', function () {
  this.timeout(30000);
  let h: ApiHarness;
  before(async () => {
    h = await ApiHarness.start(BOTH_DBS[0]!);
  });
  after(async () => h?.stop());

  it('shows the defaults, changes only what is sent, and refuses values out of range', async () => {
    const t = await h.tenant('Prepaid', 0);
    const first = await h.req('GET', '/api/account/prepaid', { key: t.key });
    assert.deepEqual(first.body, { language: 'en', credit_warning_seconds: 60, last_good_document: false });
    const set = await h.req('POST', '/api/account/prepaid', { key: t.key, body: { language: 'sw' } });
    assert.deepEqual(set.body, { language: 'sw', credit_warning_seconds: 60, last_good_document: false });
    const more = await h.req('POST', '/api/account/prepaid', {
      key: t.key,
      body: { credit_warning_seconds: 0, last_good_document: true },
    });
    assert.deepEqual(more.body, { language: 'sw', credit_warning_seconds: 0, last_good_document: true });
    assert.equal((await h.req('POST', '/api/account/prepaid', { key: t.key, body: { language: 'fr' } })).status, 400);
    const long = { credit_warning_seconds: 601 };
    assert.equal((await h.req('POST', '/api/account/prepaid', { key: t.key, body: long })).status, 400);
    assert.equal((await h.req('GET', '/api/account/prepaid', { key: null })).status, 401);
  });
});
