import { listDestinationRulesCached, type Db } from '../store/index.js';

export type DestinationVerdict =
  { allowed: true } | { allowed: false; reason: 'blocked' | 'not_allowed'; prefix?: string };

/**
 * Toll-fraud control before any outbound PSTN leg is dialled (originate, Dial): a platform block prefix refuses
 * the destination for everyone; an account with an allowlist may reach only numbers under one of its prefixes.
 * Read through the store's read cache: a change made in this process applies to the next call, one made by another
 * process (the CLI) within 50 ms (SQLite) or at its commit (PostgreSQL).
 */
export async function checkDestination(db: Db, accountId: string, e164: string): Promise<DestinationVerdict> {
  const digits = e164.replace(/^\+/, '');
  const rules = await listDestinationRulesCached(db, accountId);
  const block = rules.find((r) => r.kind === 'block' && r.account_id === null && digits.startsWith(r.prefix));
  if (block) return { allowed: false, reason: 'blocked', prefix: block.prefix };
  const allows = rules.filter((r) => r.kind === 'allow' && r.account_id === accountId);
  if (allows.length > 0 && !allows.some((r) => digits.startsWith(r.prefix)))
    return { allowed: false, reason: 'not_allowed' };
  return { allowed: true };
}
