import { formatMoney, reconcileTopups, CURRENCY, type TopupReconciliation } from '../../billing/index.js';
import { listTopupProviders, randomToken, removeTopupProvider, setTopupProvider } from '../../store/index.js';
import { Flags, UsageError } from '../args.js';
import { money, account, cliActor, operation, type Command, type CommandGroup } from '../command.js';
import { topUpOp } from '../../api/index.js';
import { instant } from './cdr.js';

const PROVIDER = /^[a-z0-9-]{1,40}$/;

function providerName(v: string | undefined): string {
  if (!v || !PROVIDER.test(v)) throw new UsageError('NAME: 1-40 lower-case letters, digits or -, e.g. mpesa');
  return v;
}

class TopupsUnbalancedError extends Error {
  readonly code = 'TOPUPS_UNBALANCED';
  constructor(mismatches: number) {
    super(`the top-up callbacks do not balance to the ledger (${mismatches} mismatches)`);
  }
}

/** The report as an operator reads it: one line per provider, the ledger's sums, then every mismatch. */
function reconciliationText(r: TopupReconciliation): string {
  const lines = [`top-ups received ${r.from} .. ${r.to} (${CURRENCY})`];
  for (const p of r.providers) {
    const unrecovered = p.reversalCents - p.reversedCents;
    lines.push(
      `  ${p.provider}: ${p.payments} payments ${formatMoney(p.paymentCents)}, ${p.reversals} reversals ` +
        `${formatMoney(p.reversalCents)}` +
        (unrecovered ? ` (${formatMoney(unrecovered)} not recovered: balance spent)` : '') +
        `, net ${formatMoney(p.netCents)}`,
    );
  }
  const l = r.ledger;
  lines.push(
    `  ledger: ${l.credits} credits ${formatMoney(l.creditCents)}, ${l.debits} debits ${formatMoney(l.debitCents)}, ` +
      `net ${formatMoney(l.creditCents - l.debitCents)}`,
  );
  for (const m of r.mismatches) lines.push(`  MISMATCH ${m.key}: ${m.problem}`);
  lines.push(r.balanced ? 'balanced' : 'NOT BALANCED');
  return lines.join('\n');
}

const providerSet: Command = async (db, args, out) => {
  const f = new Flags(args);
  const env = f.string('secret-env');
  f.done();
  const name = providerName(args.positional[0]);
  let secret: string;
  if (env !== undefined) {
    secret = process.env[env] ?? '';
    if (secret.length < 16 || secret.length > 128)
      throw new UsageError(`the environment variable ${env} must hold a secret of 16 to 128 characters`);
  } else secret = randomToken(32);
  await setTopupProvider(db, name, secret);
  const shown = env === undefined ? secret : undefined;
  out.print(shown ? `provider ${name}: secret ${shown} (shown once)` : `provider ${name}: secret set from ${env}`, {
    name,
    ...(shown ? { secret: shown } : {}),
  });
};

const providerList: Command = async (db, args, out) => {
  new Flags(args).done();
  const rows = (await listTopupProviders(db)).map((p) => ({ name: p.name, updated_at: p.updated_at }));
  out.print(rows.map((p) => `${p.name}  (secret set ${p.updated_at})`).join('\n') || '(no providers)', rows);
};

const providerRemove: Command = async (db, args, out) => {
  new Flags(args).done();
  const name = providerName(args.positional[0]);
  if (!(await removeTopupProvider(db, name))) throw new UsageError(`no provider named ${name}`);
  out.print(`provider ${name} removed`, { name });
};

/** Wallet top-ups: by the operator, and from mobile-money providers. */
export const walletCommands: CommandGroup = {
  noun: 'wallet',
  help: `  wallet topup ID AMOUNT [--reason TEXT]         credit the wallet, e.g. 500.00 (KES); the reason is kept
                                                 in the ledger and the operator audit log
  wallet provider set NAME [--secret-env VAR]    trust a mobile-money provider's signed top-up callbacks; the
                                                 secret is read from the environment variable VAR, or made and
                                                 printed once (give it to the provider); again: replaces it
  wallet provider list                           the providers (never their secrets)
  wallet provider remove NAME                    stop accepting a provider's callbacks
  wallet reconcile --from DATE [--to DATE]       top-up callbacks received in [from, to) (to: now) against the
                                                 ledger; exit status 2 when they do not balance`,
  commands: {
    async 'wallet topup'(db, args, out) {
      const f = new Flags(args);
      const reason = f.string('reason') ?? '';
      f.done();
      const a = await account(db, args.positional[0]);
      const amount = money(args.positional[1], 'AMOUNT');
      if (amount <= 0) throw new UsageError('AMOUNT must be more than 0.00');
      const r = await operation(topUpOp(db, cliActor(), a.id, amount, reason));
      const result = { uuid: a.id, balance: formatMoney(r.balanceAfterCents), currency: CURRENCY };
      out.print(`account ${a.id}: +${formatMoney(amount)}, balance ${result.balance} ${CURRENCY}`, result);
    },
    async 'wallet provider'(db, args, out) {
      const [action, ...rest] = args.positional;
      const sub = { ...args, positional: rest };
      if (action === 'set') return providerSet(db, sub, out);
      if (action === 'list') return providerList(db, sub, out);
      if (action === 'remove') return providerRemove(db, sub, out);
      throw new UsageError('wallet provider takes set, list or remove');
    },
    async 'wallet reconcile'(db, args, out) {
      const f = new Flags(args);
      const from = instant(f.string('from', { required: true })!, 'from');
      const toFlag = f.string('to');
      f.done();
      const to = toFlag === undefined ? new Date().toISOString() : instant(toFlag, 'to');
      const r = await reconcileTopups(db, from, to);
      out.print(reconciliationText(r), r);
      if (!r.balanced) throw new TopupsUnbalancedError(r.mismatches.length);
    },
  },
};
