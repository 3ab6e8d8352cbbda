/**
 * Each account's readable SIP domain: a label (a "slug", e.g. `acme`) under the switch's domain
 * (config `sip.domain`), so the account's phones use `sip:1001@acme.sip.example.net`. The label is derived from
 * the account's name when the account is created (unique, numbered on a clash), and the operator may change it
 * (`simu account sip-domain`). The account uuid stays accepted as a domain too (sip/registrar-credentials.ts).
 */
import type { Db, Tx } from './db.js';
import { runSql, selectRows } from './fixed-sql.js';
import { ConflictError, isUniqueViolation } from './errors.js';
import { cachedRead } from './read-cache.js';
import { isValidSipLabel } from './sip-labels.js';

export { isValidSipLabel, sipLabelOf } from './sip-labels.js';

/**
 * The first free label of `base`, `base-2`, `base-3` ... among the accounts' labels (one query). `db` may be a
 * transaction (account creation).
 */
export async function freeSipLabel(db: Db | Tx, base: string): Promise<string> {
  const rows = await selectRows(db, 'select "sip_label" from "accounts" where "sip_label" = ? or "sip_label" like ?', [
    base,
    `${base}-%`,
  ]);
  const taken = new Set<string>(rows.map((r) => String(r.sip_label)));
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) {
    const candidate = `${base}-${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/** The account whose SIP domain label is `label`, from the per-process read cache; undefined when none. */
export async function accountIdOfSipLabel(db: Db, label: string): Promise<string | undefined> {
  const l = label.toLowerCase();
  if (!isValidSipLabel(l)) return undefined;
  return cachedRead(db, 'accounts', `sip-label:${l}`, async () => {
    const [row] = await selectRows(db, 'select "id" from "accounts" where "sip_label" = ? limit 1', [l]);
    return row ? String(row.id) : undefined;
  });
}

/**
 * Sets an account's label (the operator's `simu account sip-domain`). INVALID_SIP_DOMAIN (400-like, a
 * ConflictError with status 409 only for a taken label) when it is not a valid label or another account has it.
 */
export async function setAccountSipLabel(db: Db | Tx, accountId: string, label: string): Promise<void> {
  const l = label.toLowerCase();
  if (!isValidSipLabel(l)) {
    throw new ConflictError(
      `"${label.slice(0, 80)}" is not a SIP domain label: 1-63 of a-z, 0-9 and single inner hyphens, starting with a letter`,
      'INVALID_SIP_DOMAIN',
    );
  }
  try {
    await runSql(db, 'update "accounts" set "sip_label" = ? where "id" = ?', [l, accountId], {
      table: 'accounts',
      columns: ['sip_label'],
    });
  } catch (e) {
    if (isUniqueViolation(e))
      throw new ConflictError(`SIP domain ${l} is taken by another account`, 'SIP_DOMAIN_TAKEN');
    throw e;
  }
}
