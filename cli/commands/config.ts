import { configTable } from '../../config/index.js';
import { Flags } from '../args.js';
import { type CommandGroup } from '../command.js';

/** The settings table. */
export const configCommands: CommandGroup = {
  noun: 'config',
  help: `  config table                                   every setting with its default`,
  commands: {
    async 'config table'(_db, args, out) {
      new Flags(args).done();
      out.print(configTable(), { table: configTable() });
    },
  },
};
