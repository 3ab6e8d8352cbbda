import { restoreSqliteStore } from '../../store/index.js';
import { Flags } from '../args.js';
import type { CommandGroup } from '../command.js';
import { fileArgument, refusePostgres } from './backup.js';

/** A backup (simu backup) put in place of the SQLite store, with the switch stopped. */
export const restoreCommands: CommandGroup = {
  noun: 'restore',
  help: `  restore FILE                                   put a backup in place of the SQLite store (switch stopped;
                                                 the replaced store is kept beside it)`,
  commands: {},
  offline: {
    async restore(config, args, out) {
      new Flags(args).done();
      refusePostgres(config, 'restore');
      const file = fileArgument(args.positional, 'the backup file');
      const r = restoreSqliteStore(config.dataDir, file);
      out.print(`restored ${file} as ${r.file}${r.previous ? `; the store it replaced is ${r.previous}` : ''}`, {
        restored: file,
        store: r.file,
        previous: r.previous ?? null,
      });
    },
  },
};
