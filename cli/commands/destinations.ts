import { addDestinationRule, removeDestinationRule, listDestinationRules } from '../../store/index.js';
import { Flags, UsageError } from '../args.js';
import { account, type CommandGroup } from '../command.js';

/** Toll-fraud controls: allowed and blocked destination prefixes. */
function destinationPrefix(value: string | undefined): string {
  const p = (value ?? '').replace(/^\+/, '');
  if (!/^\d{1,15}$/.test(p))
    throw new UsageError(
      `PREFIX must be digits of an E.164 number, e.g. 254 or +2547, not ${JSON.stringify(value ?? '')}`,
    );
  return p;
}

export const destinationsCommands: CommandGroup = {
  noun: 'destinations',
  help: `  destinations allow ID PREFIX | destinations block PREFIX     toll-fraud controls: an account with allow
  destinations remove allow|block PREFIX [--account ID]        rules reaches only those prefixes; block
  destinations list [--account ID]                             prefixes are refused for every account`,
  commands: {
    async 'destinations allow'(db, args, out) {
      new Flags(args).done();
      const a = await account(db, args.positional[0]);
      const prefix = destinationPrefix(args.positional[1]);
      const added = await addDestinationRule(db, { accountId: a.id, kind: 'allow', prefix });
      out.print(
        `account ${a.id} may call +${prefix}…${added ? '' : ' (already allowed)'}; other destinations are refused`,
        {
          account: a.id,
          allow: prefix,
        },
      );
    },
    async 'destinations block'(db, args, out) {
      new Flags(args).done();
      const prefix = destinationPrefix(args.positional[0]);
      const added = await addDestinationRule(db, { accountId: null, kind: 'block', prefix });
      out.print(`+${prefix}… is blocked for every account${added ? '' : ' (already blocked)'}`, { block: prefix });
    },
    async 'destinations remove'(db, args, out) {
      const f = new Flags(args);
      const accountId = f.string('account');
      f.done();
      const kind = args.positional[0];
      if (kind !== 'allow' && kind !== 'block') throw new UsageError('KIND must be allow or block');
      const prefix = destinationPrefix(args.positional[1]);
      const a = accountId ? await account(db, accountId) : undefined;
      if (kind === 'allow' && !a) throw new UsageError('an allow rule belongs to an account: give --account ID');
      if (!(await removeDestinationRule(db, { accountId: a?.id ?? null, kind, prefix })))
        throw new UsageError(`no ${kind} rule for +${prefix}`);
      out.print(`${kind} +${prefix} removed`, { removed: { kind, prefix, account: a?.id ?? null } });
    },
    async 'destinations list'(db, args, out) {
      const f = new Flags(args);
      const accountId = f.string('account');
      f.done();
      const rows = await listDestinationRules(db, accountId ? (await account(db, accountId)).id : undefined);
      out.print(
        rows.map((r) => `${r.kind.padEnd(6)} +${r.prefix.padEnd(14)} ${r.account_id ?? '(platform)'}`).join('\n') ||
          '(no rules)',
        rows,
      );
    },
  },
};
