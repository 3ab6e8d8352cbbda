import type { Db } from './db.js';
import { cachedRead } from './read-cache.js';
import { newId, nowIso } from './ids.js';
import { isUniqueViolation } from './errors.js';

export type DestinationRuleKind = 'allow' | 'block';

export interface DestinationRuleRow {
  id: string;
  account_id: string | null;
  kind: DestinationRuleKind;
  prefix: string;
  created_at: string;
}

/** Adds a rule; an identical rule already there is kept (returns false). */
/** The query for one rule: a platform rule has no account (`account_id IS NULL`, not `= NULL`). */
function oneRule(db: Db, accountId: string | null, kind: DestinationRuleKind, prefix: string) {
  const q = db('destination_rules').where({ kind, prefix });
  return accountId === null ? q.whereNull('account_id') : q.where({ account_id: accountId });
}

export async function addDestinationRule(
  db: Db,
  accountId: string | null,
  kind: DestinationRuleKind,
  prefix: string,
): Promise<boolean> {
  // The unique index does not catch platform rules (NULL account ids are distinct in SQL), so look first.
  if (await oneRule(db, accountId, kind, prefix).first()) return false;
  try {
    await db('destination_rules').insert({ id: newId(), account_id: accountId, kind, prefix, created_at: nowIso() });
    return true;
  } catch (e) {
    if (isUniqueViolation(e)) return false;
    throw e;
  }
}

export async function removeDestinationRule(
  db: Db,
  accountId: string | null,
  kind: DestinationRuleKind,
  prefix: string,
): Promise<boolean> {
  return (await oneRule(db, accountId, kind, prefix).delete()) > 0;
}

/** The platform's rules and, when given, one account's: everything a destination check needs. */
export async function listDestinationRules(db: Db, accountId?: string): Promise<DestinationRuleRow[]> {
  const q = db('destination_rules').orderBy(['kind', 'prefix']);
  if (accountId) q.where((w) => w.whereNull('account_id').orWhere({ account_id: accountId }));
  return q;
}

/**
 * listDestinationRules through the per-process read cache (store/read-cache.ts): every outbound leg is checked. A
 * rule changed in this process applies to the next call; one changed by another process (the CLI) within two
 * seconds.
 */
export async function listDestinationRulesCached(db: Db, accountId: string): Promise<DestinationRuleRow[]> {
  return cachedRead(db, 'destination_rules', accountId, () => listDestinationRules(db, accountId));
}
