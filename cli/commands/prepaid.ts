import { updateAccount, type AccountRow } from '../../store/index.js';
import { Flags, UsageError } from '../args.js';
import { account, type CommandGroup } from '../command.js';

const present = (a: AccountRow) => ({
  uuid: a.id,
  language: a.language,
  credit_warning_seconds: a.credit_warning_seconds,
  last_good_document: Boolean(a.last_good_document),
});

/** An account's prepaid experience: its callers' language, the warning before the cut, last good. */
export const prepaidCommands: CommandGroup = {
  noun: 'prepaid',
  help: `  prepaid settings ID [--language en|sw] [--warning-seconds N] [--last-good on|off]
                                                 the language of the switch's notices to the account's callers,
                                                 the lead time of the "one minute left" notice (0-600 s, 0: off)
                                                 and the last known good document opt-in; no option: shows them`,
  commands: {
    async 'prepaid settings'(db, args, out) {
      const f = new Flags(args);
      const language = f.string('language');
      const warning = f.int('warning-seconds', { min: 0, max: 600 });
      const lastGood = f.string('last-good');
      f.done();
      const a = await account(db, args.positional[0]);
      const patch: Partial<AccountRow> = {};
      if (language !== undefined) {
        if (language !== 'en' && language !== 'sw') throw new UsageError('--language is en or sw');
        patch.language = language;
      }
      if (warning !== undefined) patch.credit_warning_seconds = warning;
      if (lastGood !== undefined) {
        if (lastGood !== 'on' && lastGood !== 'off') throw new UsageError('--last-good is on or off');
        patch.last_good_document = lastGood === 'on';
      }
      const row = Object.keys(patch).length ? await updateAccount(db, a.id, patch) : a;
      const shown = present(row);
      out.print(
        `account ${a.id}: language ${shown.language}, warning ${shown.credit_warning_seconds} s before the cut` +
          `${shown.credit_warning_seconds ? '' : ' (off)'}, last good document ${shown.last_good_document ? 'on' : 'off'}`,
        shown,
      );
    },
  },
};
