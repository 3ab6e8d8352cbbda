import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Flags } from '../args.js';
import { withGeneratedCodes } from '../codes-doc.js';
import { type CommandGroup } from '../command.js';

/** Generated documentation. */
export const docsCommands: CommandGroup = {
  noun: 'docs',
  help: `  docs codes                                     rewrite docs/events.md's code tables from the catalogue`,
  commands: {
    async 'docs codes'(_db, args, out) {
      new Flags(args).done();
      const file = path.join(import.meta.dirname, '..', '..', 'docs', 'events.md');
      writeFileSync(file, withGeneratedCodes(readFileSync(file, 'utf8')));
      out.print(`${file}: event and reason code tables rewritten from events/catalogue.ts`, { file });
    },
  },
};
