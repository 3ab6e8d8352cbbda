import { setRate, listRates, RATE_KINDS, type RateKind } from '../../store/index.js';
import { formatMoney, CURRENCY } from '../../billing/index.js';
import { Flags, UsageError } from '../args.js';
import { money, type CommandGroup } from '../command.js';

/** What each kind of rate is charged per, as the usage text says. */
const UNIT: Record<RateKind, string> = {
  outbound: '/min',
  inbound: '/min',
  internal: '/min',
  tts: '/s',
  did_setup: ' once',
};

/** Rates per kind (and prefix or tier). */
export const ratesCommands: CommandGroup = {
  noun: 'rates',
  help: `  rates set KIND AMOUNT [--prefix DIGITS] [--tier T]   KIND: outbound, inbound, internal (per minute),
                                                 tts (per second), did_setup (once)
  rates list`,
  commands: {
    async 'rates set'(db, args, out) {
      const f = new Flags(args);
      const prefix = f.string('prefix', { default: '' })!;
      const tier = f.string('tier', { default: '' })!;
      f.done();
      const kind = args.positional[0] as RateKind;
      if (!RATE_KINDS.includes(kind)) throw new UsageError(`KIND must be one of ${RATE_KINDS.join(', ')}`);
      const amount = money(args.positional[1], 'AMOUNT');
      if (prefix && !/^\d{1,15}$/.test(prefix))
        throw new UsageError('--prefix takes digits of the E.164 number without +');
      if (prefix && kind !== 'outbound') throw new UsageError('--prefix applies to outbound rates only');
      if (tier && kind !== 'tts') throw new UsageError('--tier applies to tts rates only');
      const r = await setRate(db, kind, amount, prefix, tier);
      const shown = {
        kind: r.kind,
        prefix: r.prefix,
        tier: r.tier,
        amount: formatMoney(r.amount_cents),
        currency: CURRENCY,
      };
      out.print(
        `rate ${r.kind}${r.prefix ? ` +${r.prefix}` : ''}${r.tier ? ` tier ${r.tier}` : ''} = ${shown.amount} ${CURRENCY}${UNIT[r.kind]}`,
        shown,
      );
    },
    async 'rates list'(db, args, out) {
      new Flags(args).done();
      const rows = (await listRates(db)).map((r) => ({
        kind: r.kind,
        prefix: r.prefix,
        tier: r.tier,
        amount: formatMoney(r.amount_cents),
      }));
      out.print(
        rows
          .map(
            (r) =>
              `${r.kind.padEnd(10)} ${(r.prefix || r.tier || '*').padEnd(12)} ${r.amount} ${CURRENCY}${UNIT[r.kind]}`,
          )
          .join('\n') || '(no rates)',
        rows,
      );
    },
  },
};
