import { getSetting } from '../../store/index.js';
import { setDrainingOp } from '../../api/index.js';
import { Flags } from '../args.js';
import { cliActor, operation, type CommandGroup } from '../command.js';

/** Draining: stop or restart admitting new calls. */
export const platformCommands: CommandGroup = {
  noun: 'platform',
  help: `  platform drain | platform resume | platform status   stop or restart admitting new calls`,
  commands: {
    async 'platform drain'(db, args, out) {
      new Flags(args).done();
      await operation(setDrainingOp(db, cliActor(), true));
      out.print('platform draining: new calls are refused with PLATFORM.0503; calls in progress continue', {
        draining: true,
      });
    },
    async 'platform resume'(db, args, out) {
      new Flags(args).done();
      await operation(setDrainingOp(db, cliActor(), false));
      out.print('platform admitting new calls', { draining: false });
    },
    async 'platform status'(db, args, out) {
      new Flags(args).done();
      const draining = (await getSetting(db, 'draining')) === 'true';
      out.print(draining ? 'draining' : 'admitting', { draining });
    },
  },
};
