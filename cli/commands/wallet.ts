import { post, formatMoney, CURRENCY } from '../../billing/index.js';
import { Flags, UsageError } from '../args.js';
import { money, account, type CommandGroup } from '../command.js';

/** Wallet top-ups. */
export const walletCommands: CommandGroup = {
  noun: 'wallet',
  help: `  wallet topup ID AMOUNT                         credit the wallet, e.g. 500.00 (KES)`,
  commands: {
    async 'wallet topup'(db, args, out) {
      new Flags(args).done();
      const a = await account(db, args.positional[0]);
      const amount = money(args.positional[1], 'AMOUNT');
      if (amount <= 0) throw new UsageError('AMOUNT must be more than 0.00');
      const r = await post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: amount });
      const result = { uuid: a.id, balance: formatMoney(r.balanceAfterCents), currency: CURRENCY };
      out.print(`account ${a.id}: +${formatMoney(amount)}, balance ${result.balance} ${CURRENCY}`, result);
    },
  },
};
