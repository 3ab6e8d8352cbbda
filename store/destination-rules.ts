import type { Db } from './db.js';
import { firstRow, insertRows, runSqlCount, selectRows } from './fixed-sql.js';
import { cachedRead } from './read-cache.js';
import { newId, nowIso } from './ids.js';
import { isUniqueViolation } from './errors.js';

export type DestinationRuleKind = 'allow' | 'block';

/** What names one rule: a platform rule has no account (`accountId` null). */
export interface DestinationRuleKey {
  accountId: string | null;
  kind: DestinationRuleKind;
  prefix: string;
}

export interface DestinationRuleRow {
  id: string;
  account_id: string | null;
  kind: DestinationRuleKind;
  prefix: string;
  created_at: string;
}

/** The condition for one rule: a platform rule has no account (`account_id IS NULL`, not `= NULL`). */
function oneRule({ accountId, kind, prefix }: DestinationRuleKey): [string, unknown[]] {
  return accountId === null
    ? ['"kind" = ? and "prefix" = ? and "account_id" is null', [kind, prefix]]
    : ['"kind" = ? and "prefix" = ? and "account_id" = ?', [kind, prefix, accountId]];
}

/** Adds a rule; an identical rule already there is kept (returns false). */
export async function addDestinationRule(db: Db, rule: DestinationRuleKey): Promise<boolean> {
  // The unique index does not catch platform rules (NULL account ids are distinct in SQL), so look first.
  const [where, bindings] = oneRule(rule);
  if (await firstRow(db, `select "id" from "destination_rules" where ${where} limit 1`, bindings)) return false;
  try {
    await insertRows(db, 'destination_rules', [
      { id: newId(), account_id: rule.accountId, kind: rule.kind, prefix: rule.prefix, created_at: nowIso() },
    ]);
    return true;
  } catch (e) {
    if (isUniqueViolation(e)) return false;
    throw e;
  }
}

export async function removeDestinationRule(db: Db, rule: DestinationRuleKey): Promise<boolean> {
  const [where, bindings] = oneRule(rule);
  return (await runSqlCount(db, `delete from "destination_rules" where ${where}`, bindings, 'destination_rules')) > 0;
}

/** The platform's rules and, when given, one account's: everything a destination check needs. */
export async function listDestinationRules(db: Db, accountId?: string): Promise<DestinationRuleRow[]> {
  const order = ' order by "kind" asc, "prefix" asc';
  const rows = accountId
    ? await selectRows(
        db,
        `select * from "destination_rules" where ("account_id" is null or "account_id" = ?)${order}`,
        [accountId],
      )
    : await selectRows(db, `select * from "destination_rules"${order}`, []);
  return rows as unknown as DestinationRuleRow[];
}

/**
 * listDestinationRules through the per-process read cache (store/read-cache.ts): every outbound leg is checked. A
 * rule changed in this process applies to the next call; one changed by another process (the CLI) within two
 * seconds.
 */
export async function listDestinationRulesCached(db: Db, accountId: string): Promise<DestinationRuleRow[]> {
  return cachedRead(db, 'destination_rules', accountId, () => listDestinationRules(db, accountId));
}
