import { ledgerRowsWithKeyPrefix, walletTopupsBetween, type Db, type WalletTopupRow } from '../store/index.js';
import { TOPUP_KEY_PREFIX } from './topups.js';

/** Per provider: what its callbacks said and what the ledger moved for them. */
export interface ProviderTotals {
  provider: string;
  payments: number;
  paymentCents: number;
  reversals: number;
  /** What the reversals asked back, and what the ledger could take (a spent balance stops at zero). */
  reversalCents: number;
  reversedCents: number;
  /** Credits less debits the ledger posted for this provider's callbacks. */
  netCents: number;
}

export interface TopupMismatch {
  key: string;
  problem: 'no ledger row' | 'no top-up record' | 'amounts differ';
  topupCents?: number;
  ledgerCents?: number;
}

export interface TopupReconciliation {
  from: string;
  to: string;
  providers: ProviderTotals[];
  /** The ledger's own sums over the rows posted for top-up callbacks in the window. */
  ledger: { credits: number; creditCents: number; debits: number; debitCents: number };
  mismatches: TopupMismatch[];
  /** True when every callback has its ledger row with the same amount and the ledger has no other. */
  balanced: boolean;
}

const keyOf = (t: WalletTopupRow): string =>
  `${TOPUP_KEY_PREFIX}${t.provider}:${t.receipt}${t.kind === 'reversal' ? ':reversal' : ''}`;

/**
 * The reconciliation of top-up callbacks received in [from, to) against the ledger (`simu wallet reconcile`).
 * A callback's record takes the created_at of the ledger row it posted, in the same transaction, so both sides of
 * the report select the same rows for any window.
 */
export async function reconcileTopups(db: Db, from: string, to: string): Promise<TopupReconciliation> {
  const topups = await walletTopupsBetween(db, from, to);
  const ledgerRows = await ledgerRowsWithKeyPrefix(db, TOPUP_KEY_PREFIX, from, to);
  const byKey = new Map(ledgerRows.map((r) => [r.settlement_key, r]));
  const providers = new Map<string, ProviderTotals>();
  const mismatches: TopupMismatch[] = [];
  for (const t of topups) {
    let p = providers.get(t.provider);
    if (!p) {
      p = {
        provider: t.provider,
        payments: 0,
        paymentCents: 0,
        reversals: 0,
        reversalCents: 0,
        reversedCents: 0,
        netCents: 0,
      };
      providers.set(t.provider, p);
    }
    if (t.kind === 'payment') {
      p.payments++;
      p.paymentCents += t.amount_cents;
      p.netCents += t.posted_cents;
    } else {
      p.reversals++;
      p.reversalCents += t.amount_cents;
      p.reversedCents += t.posted_cents;
      p.netCents -= t.posted_cents;
    }
    const key = keyOf(t);
    const row = byKey.get(key);
    byKey.delete(key);
    if (!row) mismatches.push({ key, problem: 'no ledger row', topupCents: t.posted_cents });
    else if (row.amount_cents !== t.posted_cents || row.id !== t.ledger_id)
      mismatches.push({ key, problem: 'amounts differ', topupCents: t.posted_cents, ledgerCents: row.amount_cents });
  }
  for (const [key, row] of byKey) mismatches.push({ key, problem: 'no top-up record', ledgerCents: row.amount_cents });
  const ledger = { credits: 0, creditCents: 0, debits: 0, debitCents: 0 };
  for (const r of ledgerRows) {
    if (r.direction === 'credit') {
      ledger.credits++;
      ledger.creditCents += r.amount_cents;
    } else {
      ledger.debits++;
      ledger.debitCents += r.amount_cents;
    }
  }
  const list = [...providers.values()];
  const net = list.reduce((s, p) => s + p.netCents, 0);
  return {
    from,
    to,
    providers: list,
    ledger,
    mismatches,
    balanced: mismatches.length === 0 && net === ledger.creditCents - ledger.debitCents,
  };
}
