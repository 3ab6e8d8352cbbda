import { addPoolNumbers, listPool, E164 } from '../../store/index.js';
import { Flags, UsageError } from '../args.js';
import { type CommandGroup } from '../command.js';

/** The pool of acquirable numbers. */
export const numbersCommands: CommandGroup = {
  noun: 'numbers',
  help: `  numbers add +E164 [--count N] | numbers list   the pool of acquirable numbers`,
  commands: {
    async 'numbers add'(db, args, out) {
      const f = new Flags(args);
      const count = f.int('count', { min: 1, max: 10000 }) ?? 1;
      f.done();
      const first = args.positional[0];
      if (!first || !E164.test(first))
        throw new UsageError(`E164 must look like +254700000001, not ${JSON.stringify(first ?? '')}`);
      const digits = first.slice(1);
      const numbers = Array.from({ length: count }, (_, i) => `+${(BigInt(digits) + BigInt(i)).toString()}`);
      if (!numbers.every((n) => E164.test(n))) throw new UsageError('--count runs past the longest E.164 number');
      const added = await addPoolNumbers(db, numbers);
      out.print(`${added} of ${count} numbers added to the pool (the rest were there already)`, {
        added,
        requested: count,
      });
    },
    async 'numbers list'(db, args, out) {
      new Flags(args).done();
      const rows = (await listPool(db)).map((n) => ({ uuid: n.id, number: n.number }));
      out.print(rows.map((n) => `${n.number}  ${n.uuid}`).join('\n') || '(pool is empty)', rows);
    },
  },
};
