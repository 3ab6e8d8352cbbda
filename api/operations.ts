import { isIP } from 'node:net';
import {
  findAccount,
  getAccount,
  insertAccountWithApiKey,
  insertAudit,
  putSetting,
  updateAccount,
  type AccountRow,
  type Db,
} from '../store/index.js';
import { post } from '../billing/index.js';
import { liftBan } from '../sip/index.js';

/**
 * The operator's actions, one code path for the CLI (`bin/simu ...`) and the console (/console/): each checks its
 * input, does the work and writes one audit row (who, what, on what, when). A refused action is audited too, with
 * `ok: false`, and throws an OperationError the caller shows (the CLI as a usage error, the console as a 400).
 */
export class OperationError extends Error {}

/** Who did it: `operator:EMAIL` (console) or `cli:USER` (the command line). */
export type Actor = string;

async function audited<T>(
  db: Db,
  actor: Actor,
  action: string,
  target: string,
  detail: Record<string, unknown>,
  work: () => Promise<T>,
): Promise<T> {
  try {
    const r = await work();
    await insertAudit(db, { actor, action, target, detail });
    return r;
  } catch (e) {
    if (e instanceof OperationError)
      await insertAudit(db, { actor, action, target, detail: { ...detail, error: e.message }, ok: false });
    throw e;
  }
}

async function accountOrFail(db: Db, id: string): Promise<AccountRow> {
  const a = id ? await findAccount(db, id) : undefined;
  if (!a) throw new OperationError(`no account with id ${id}`);
  return a;
}

/** A new account with its first API key (shown once) and an opening balance. */
export function createAccountOp(db: Db, actor: Actor, name: string, balanceCents: number) {
  const clean = name.trim();
  return audited(db, actor, 'account.create', clean, { balance_cents: balanceCents }, async () => {
    if (!clean || clean.length > 200) throw new OperationError('the name must be 1 to 200 characters');
    if (!Number.isInteger(balanceCents) || balanceCents < 0) throw new OperationError('the balance must be 0 or more');
    // Account, first key and opening balance are written together or not at all.
    const { account, key } = await insertAccountWithApiKey(db, clean, 'default');
    if (balanceCents > 0)
      await post(db, { accountId: account.id, direction: 'credit', kind: 'topup', amountCents: balanceCents });
    return { account: await getAccount(db, account.id), key };
  });
}

/** Suspend (its keys get 401, new calls BILL.0407) or resume an account. */
export function setAccountStatusOp(db: Db, actor: Actor, id: string, status: 'active' | 'suspended') {
  return audited(db, actor, status === 'active' ? 'account.resume' : 'account.suspend', id, {}, async () => {
    const a = await accountOrFail(db, id);
    return updateAccount(db, a.id, { status });
  });
}

export interface Caps {
  concurrency?: number;
  cps?: number;
  maxDurationSeconds?: number;
}

const CAP_LIMITS = { concurrency: [0, 100000], cps: [0, 10000], maxDurationSeconds: [1, 7 * 86400] } as const;

/** An account's caps: concurrent calls, calls per second, longest call. */
export function setAccountCapsOp(db: Db, actor: Actor, id: string, caps: Caps) {
  return audited(db, actor, 'account.caps', id, { ...caps }, async () => {
    const a = await accountOrFail(db, id);
    const given = Object.entries(caps).filter(([, v]) => v !== undefined) as Array<[keyof Caps, number]>;
    if (given.length === 0) throw new OperationError('give at least one of concurrency, cps, max duration');
    for (const [k, v] of given) {
      const [min, max] = CAP_LIMITS[k];
      if (!Number.isInteger(v) || v < min || v > max) throw new OperationError(`${k} must be ${min} to ${max}`);
    }
    return updateAccount(db, a.id, {
      ...(caps.concurrency !== undefined && { max_concurrent_calls: caps.concurrency }),
      ...(caps.cps !== undefined && { max_cps: caps.cps }),
      ...(caps.maxDurationSeconds !== undefined && { max_call_seconds: caps.maxDurationSeconds }),
    });
  });
}

/** Credits a wallet; the reason, when given, is kept in the ledger row. */
export function topUpOp(db: Db, actor: Actor, id: string, amountCents: number, reason = '') {
  const why = reason.trim().slice(0, 500);
  return audited(db, actor, 'wallet.topup', id, { amount_cents: amountCents, reason: why }, async () => {
    const a = await accountOrFail(db, id);
    if (!Number.isInteger(amountCents) || amountCents <= 0)
      throw new OperationError('the amount must be more than 0.00');
    return post(db, {
      accountId: a.id,
      direction: 'credit',
      kind: 'topup',
      amountCents,
      ...(why && { reason: why }),
    });
  });
}

/** Lifts a SIP source ban; the running switch lets the address in within a few seconds. */
export function liftBanOp(db: Db, actor: Actor, address: string) {
  return audited(db, actor, 'ban.lift', address, {}, async () => {
    if (!address) throw new OperationError('an address is required');
    if (isIP(address.trim()) === 0) throw new OperationError(`${address} is not an IP address`);
    if (!(await liftBan(db, address))) throw new OperationError(`${address} is not banned`);
    return address;
  });
}

/** Drain (new calls refused with PLATFORM.0503, calls in progress go on) or resume admitting. */
export function setDrainingOp(db: Db, actor: Actor, draining: boolean) {
  return audited(db, actor, draining ? 'platform.drain' : 'platform.resume', '', {}, async () => {
    await putSetting(db, 'draining', draining ? 'true' : 'false');
    return draining;
  });
}

/** Hangs up a call in progress (the console's live view): `hangup` is the call engine's, as the REST API uses it. */
export function hangupOp(db: Db, actor: Actor, callId: string, hangup: (id: string) => Promise<boolean>) {
  return audited(db, actor, 'call.hangup', callId, {}, async () => {
    if (!(await hangup(callId))) throw new OperationError(`call ${callId} is not in progress`);
    return callId;
  });
}
