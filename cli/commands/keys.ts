import { insertApiKey } from '../../store/index.js';
import { Flags } from '../args.js';
import { account, type CommandGroup } from '../command.js';

/** API keys. */
export const keysCommands: CommandGroup = {
  noun: 'keys',
  help: `  keys create ID --name N                        another API key for an account`,
  commands: {
    async 'keys create'(db, args, out) {
      const f = new Flags(args);
      const name = f.string('name', { required: true })!;
      f.done();
      const a = await account(db, args.positional[0]);
      const { row, key } = await insertApiKey(db, a.id, name);
      const shown = {
        uuid: row.id,
        name: row.name,
        prefix: row.prefix,
        is_active: row.is_active,
        last_used_at: null,
        created_at: row.created_at,
        key,
      };
      out.print(`key ${row.id} "${row.name}" for account ${a.id} (shown once): ${key}`, shown);
    },
  },
};
