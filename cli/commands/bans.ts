import { listBans, addBan } from '../../sip/index.js';
import { liftBanOp } from '../../api/index.js';
import { Flags, UsageError } from '../args.js';
import { cliActor, operation, type CommandGroup } from '../command.js';

/** SIP sources banned by the security gate. */
export const bansCommands: CommandGroup = {
  noun: 'bans',
  help: `  bans list [--all] | bans lift ADDR | bans add ADDR [--seconds N]   SIP sources banned for floods,
                                                 brute force or scanning (docs/security.md)`,
  commands: {
    async 'bans list'(db, args, out) {
      const f = new Flags(args);
      const all = f.bool('all');
      f.done();
      const rows = await listBans(db, { includeExpired: all });
      out.print(
        rows
          .map((b) => `${b.address.padEnd(40)} ${b.reason.padEnd(14)} until ${b.expires_at}  dropped ${b.hits}`)
          .join('\n') || '(no bans in force)',
        rows,
      );
    },
    async 'bans lift'(db, args, out) {
      new Flags(args).done();
      const address = args.positional[0];
      if (!address) throw new UsageError('an address is required');
      await operation(liftBanOp(db, cliActor(), address));
      out.print(`ban on ${address} lifted; the running switch lets it in within a few seconds`, { lifted: address });
    },
    async 'bans add'(db, args, out) {
      const f = new Flags(args);
      const seconds = f.int('seconds', { min: 1, max: 365 * 86400 }) ?? 3600;
      f.done();
      const address = args.positional[0];
      if (!address) throw new UsageError('an address is required');
      const ban = await addBan(db, { address, seconds });
      out.print(`${ban.address} banned until ${ban.expires_at}`, ban);
    },
  },
};
