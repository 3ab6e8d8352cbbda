import { listAccounts, getAccount, setAccountSipLabel, updateAccount } from '../../store/index.js';
import { CURRENCY } from '../../billing/index.js';
import { createAccountOp, setAccountCapsOp, setAccountStatusOp } from '../../api/index.js';
import { loadConfig } from '../../config/index.js';
import { isSupportedCountryCode } from '../../numbers/index.js';
import { Flags, UsageError } from '../args.js';
import { presentAccount, money, account, cliActor, operation, type CommandGroup } from '../command.js';

/** Accounts: create, list, suspend and resume, caps, recording retention. */
export const accountCommands: CommandGroup = {
  noun: 'account',
  help: `  account create --name N [--balance 100.00]     create an account; prints it and its first API key (once)
  account list | account suspend ID | account resume ID
  account caps ID [--concurrency N] [--cps N] [--max-duration SECONDS]
  account retention ID --days N|default          days new recordings of the account are kept
  account country ID CC|default                  country of the national numbers its phones dial (0712...)
  account sip-domain ID [LABEL]                  show or set its SIP domain label (LABEL.<sip.domain>)`,
  commands: {
    async 'account create'(db, args, out) {
      const f = new Flags(args);
      const name = f.string('name', { required: true })!.trim();
      const balance = money(f.string('balance', { default: '0.00' }), '--balance');
      f.done();
      if (!name) throw new UsageError('--name must not be empty');
      const { account: acct, key } = await operation(createAccountOp(db, cliActor(), name, balance));
      const a = presentAccount(await getAccount(db, acct.id));
      out.print(
        `account ${a.uuid} "${a.name}" created, balance ${a.wallet_balance} ${CURRENCY}\nAPI key (shown once, store it now): ${key}`,
        { account: a, api_key: key },
      );
    },
    async 'account list'(db, args, out) {
      new Flags(args).done();
      const rows = (await listAccounts(db)).map(presentAccount);
      out.print(
        rows.map((a) => `${a.uuid}  ${a.status.padEnd(9)}  ${a.wallet_balance.padStart(12)}  ${a.name}`).join('\n') ||
          '(no accounts)',
        rows,
      );
    },
    async 'account suspend'(db, args, out) {
      new Flags(args).done();
      const a = await account(db, args.positional[0]);
      const r = presentAccount(await operation(setAccountStatusOp(db, cliActor(), a.id, 'suspended')));
      out.print(`account ${r.uuid} suspended: its keys now get 401 and new calls are refused (BILL.0407)`, r);
    },
    async 'account resume'(db, args, out) {
      new Flags(args).done();
      const a = await account(db, args.positional[0]);
      const r = presentAccount(await operation(setAccountStatusOp(db, cliActor(), a.id, 'active')));
      out.print(`account ${r.uuid} active`, r);
    },
    async 'account caps'(db, args, out) {
      const f = new Flags(args);
      const concurrency = f.int('concurrency', { min: 0, max: 100000 });
      const cps = f.int('cps', { min: 0, max: 10000 });
      const maxDuration = f.int('max-duration', { min: 1, max: 7 * 86400 });
      f.done();
      const a = await account(db, args.positional[0]);
      if (concurrency === undefined && cps === undefined && maxDuration === undefined) {
        throw new UsageError('give at least one of --concurrency, --cps, --max-duration');
      }
      const r = await operation(
        setAccountCapsOp(db, cliActor(), a.id, { concurrency, cps, maxDurationSeconds: maxDuration }),
      );
      const caps = { concurrency: r.max_concurrent_calls, cps: r.max_cps, max_duration_seconds: r.max_call_seconds };
      out.print(
        `account ${r.id}: concurrency ${caps.concurrency}, cps ${caps.cps}, max duration ${caps.max_duration_seconds} s`,
        {
          uuid: r.id,
          caps,
        },
      );
    },

    /** `account retention ID --days N | --days default`: the account's own recording retention (docs/assets.md). */
    async 'account retention'(db, args, out) {
      const f = new Flags(args);
      const raw = f.string('days', { required: true })!;
      f.done();
      const id = (await account(db, args.positional[0])).id;
      let days: number | null;
      if (raw === 'default') days = null;
      else if (/^\d+$/.test(raw) && Number(raw) >= 1 && Number(raw) <= 36500) days = Number(raw);
      else
        throw new UsageError(`--days must be a whole number from 1 to 36500 or "default", not ${JSON.stringify(raw)}`);
      const a = await updateAccount(db, id, { recording_retention_days: days });
      const platform = loadConfig().recordings.retentionDays;
      out.print(
        days === null
          ? `account ${a.id}: recordings kept for the platform default (${platform} days)`
          : `account ${a.id}: new recordings kept for ${days} days`,
        { uuid: a.id, recording_retention_days: days, platform_default_days: platform },
      );
    },

    /**
     * `account sip-domain ID [LABEL]`: the account's readable SIP domain, LABEL under the switch's `sip.domain`.
     * Phones registered under the old label must be set to the new one; the uuid form keeps working.
     */
    async 'account sip-domain'(db, args, out) {
      new Flags(args).done();
      const id = (await account(db, args.positional[0])).id;
      const label = args.positional[1]?.trim();
      if (label !== undefined) await setAccountSipLabel(db, id, label);
      const a = await getAccount(db, id);
      const domain = `${a.sip_label ?? a.id}.${loadConfig().sip.domain}`;
      out.print(`account ${a.id}: SIP domain ${domain} (also ${a.id}.${loadConfig().sip.domain})`, {
        uuid: a.id,
        sip_label: a.sip_label,
        sip_domain: domain,
      });
    },

    /** `account country ID CC | default`: the country whose national numbers the account's phones dial. */
    async 'account country'(db, args, out) {
      new Flags(args).done();
      const id = (await account(db, args.positional[0])).id;
      const raw = (args.positional[1] ?? '').trim();
      if (!raw) throw new UsageError('give a country code (KE, TZ, GB ...) or "default"');
      const country = raw === 'default' ? null : raw.toUpperCase();
      if (country !== null && !isSupportedCountryCode(country))
        throw new UsageError(`${JSON.stringify(raw)} is not a country code (ISO 3166-1 alpha-2, such as KE)`);
      const a = await updateAccount(db, id, { country });
      const platform = loadConfig().numbers.defaultCountry;
      out.print(
        country === null
          ? `account ${a.id}: national numbers read as the platform default (${platform})`
          : `account ${a.id}: national numbers read as ${country}`,
        { uuid: a.id, country, platform_default_country: platform },
      );
    },
  },
};
