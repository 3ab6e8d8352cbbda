import { mintStaffStreamToken } from '../../events/index.js';
import { Flags } from '../args.js';
import { type CommandGroup } from '../command.js';

/** Staff tokens for the event stream. */
export const streamCommands: CommandGroup = {
  noun: 'stream',
  help: `  stream token                                   a single-use staff token for {ws}/api/stream (all
                                                 accounts' events and PLATFORM.0001)`,
  commands: {
    async 'stream token'(db, args, out) {
      new Flags(args).done();
      const minted = await mintStaffStreamToken(db);
      out.print(`staff stream token (single use, ${minted.ttl_seconds} s): ${minted.token}`, minted);
    },
  },
};
