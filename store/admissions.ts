import { TurnBatch } from '../kit/index.js';
import type { Db } from './db.js';
import { runSql, selectRows } from './fixed-sql.js';

/**
 * Admission decided by the store (PostgreSQL; migration 036): one statement, `simu_admit`, takes the account's
 * advisory lock for its transaction, reads the balance, counts the live calls and the admissions whose call row is
 * still being written (from every node), and the admissions of the last second; then refuses or records the
 * admission. Concurrent admissions of an account, on any node, are decided one after the other against the same
 * counts, so none can take a slot another took.
 */
export type StoreVerdict = 'ok' | 'balance' | 'cap' | 'cps' | 'missing';

export interface StoreAdmissionAnswer {
  verdict: StoreVerdict;
  balanceCents: number;
  live: number;
  /** Admissions whose call is still being written (each counts as live until settled). */
  placing: number;
  /** Admissions of the account in the last second. */
  recent: number;
  /** The admission's row when admitted: settle it once the call row is written (or its write failed). */
  admissionId: string | null;
}

export interface StoreAdmissionAsk {
  accountId: string;
  nodeId: string | null;
  maxConcurrent: number;
  maxCps: number;
  /** The balance must cover this much for each live call and for the new one (its first block). */
  minimumCents: number;
  /** An admission not settled after this long is taken for one whose node died while placing it. */
  staleMs: number;
}

const ADMIT = 'select * from simu_admit(?, ?, ?, ?, ?, ?)';

export async function admitInStore(db: Db, a: StoreAdmissionAsk): Promise<StoreAdmissionAnswer> {
  const [r] = await selectRows(db, ADMIT, [
    a.accountId,
    a.nodeId,
    a.maxConcurrent,
    a.maxCps,
    a.minimumCents,
    a.staleMs,
  ]);
  if (r === undefined) throw new Error('simu_admit returned no row');
  return {
    verdict: r.verdict as StoreVerdict,
    balanceCents: Number(r.balance_cents),
    live: Number(r.live),
    placing: Number(r.pending),
    recent: Number(r.recent),
    admissionId: r.admission_id === null ? null : String(r.admission_id),
  };
}

/**
 * Admissions settled within SETTLE_GAP_MS of each other are settled by one statement: a statement per call was a
 * round trip and a PostgreSQL statement per call leg. Until settled an admission counts on top of its call, so
 * the wait only errs towards admitting fewer.
 */
const SETTLE_GAP_MS = 10;
const settlers = new WeakMap<Db, TurnBatch<string, void>>();

/** The admitted call's row is written (or its write failed): from now on the call counts through `calls` alone. */
export async function settleAdmission(db: Db, admissionId: string): Promise<void> {
  let batch = settlers.get(db);
  if (batch === undefined) {
    batch = new TurnBatch<string, void>(
      async (ids) => {
        await runSql(db, 'update "call_admissions" set "settled" = true where "id" = any(?::bigint[])', [[...ids]]);
        return ids.map(() => undefined);
      },
      { minGapMs: SETTLE_GAP_MS },
    );
    settlers.set(db, batch);
  }
  await batch.add(admissionId);
}
