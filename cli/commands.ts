import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Db } from '../store/index.js';
import {
  insertAccountWithApiKey,
  listAccounts,
  getAccount,
  findAccount,
  updateAccount,
  insertApiKey,
  addPoolNumbers,
  listPool,
  E164,
  insertTrunk,
  listTrunks,
  removeTrunk,
  setRate,
  listRates,
  RATE_KINDS,
  type RateKind,
  putSetting,
  addDestinationRule,
  removeDestinationRule,
  listDestinationRules,
  getSetting,
  type AccountRow,
} from '../store/index.js';
import { post, parseMoney, formatMoney, MoneyFormatError, CURRENCY } from '../billing/index.js';
import { configTable } from '../config/index.js';
import { listBans, liftBan, addBan } from '../sip/index.js';
import { mintStaffStreamToken } from '../events/index.js';
import { Flags, UsageError, type ParsedArgs } from './args.js';
import { withGeneratedCodes } from './codes-doc.js';

export interface Output {
  json: boolean;
  print(human: string, machine: unknown): void;
}

export const presentAccount = (a: AccountRow) => ({
  uuid: a.id,
  name: a.name,
  wallet_balance: formatMoney(a.balance_cents),
  status: a.status,
});

function destinationPrefix(value: string | undefined): string {
  const p = (value ?? '').replace(/^\+/, '');
  if (!/^\d{1,15}$/.test(p))
    throw new UsageError(
      `PREFIX must be digits of an E.164 number, e.g. 254 or +2547, not ${JSON.stringify(value ?? '')}`,
    );
  return p;
}

function money(value: string | undefined, what: string): number {
  if (value === undefined) throw new UsageError(`${what} is required`);
  try {
    return parseMoney(value);
  } catch (e) {
    if (e instanceof MoneyFormatError) throw new UsageError(`${what}: ${e.message}`);
    throw e;
  }
}

async function account(db: Db, id: string | undefined): Promise<AccountRow> {
  if (!id) throw new UsageError('an account id is required');
  const a = await findAccount(db, id);
  if (!a) throw new UsageError(`no account with id ${id}`);
  return a;
}

type Command = (db: Db, args: ParsedArgs, out: Output) => Promise<void>;

const commands: Record<string, Command> = {
  async 'account create'(db, args, out) {
    const f = new Flags(args);
    const name = f.string('name', { required: true })!.trim();
    const balance = money(f.string('balance', { default: '0.00' }), '--balance');
    f.done();
    if (!name) throw new UsageError('--name must not be empty');
    // Account, first key and opening balance are written together or not at all.
    const { account: acct, key } = await insertAccountWithApiKey(db, name, 'default');
    if (balance > 0) await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: balance });
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
    const r = presentAccount(await updateAccount(db, a.id, { status: 'suspended' }));
    out.print(`account ${r.uuid} suspended: its keys now get 401 and new calls are refused (BILL.0407)`, r);
  },

  async 'account resume'(db, args, out) {
    new Flags(args).done();
    const a = await account(db, args.positional[0]);
    const r = presentAccount(await updateAccount(db, a.id, { status: 'active' }));
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
    const r = await updateAccount(db, a.id, {
      ...(concurrency !== undefined && { max_concurrent_calls: concurrency }),
      ...(cps !== undefined && { max_cps: cps }),
      ...(maxDuration !== undefined && { max_call_seconds: maxDuration }),
    });
    const caps = { concurrency: r.max_concurrent_calls, cps: r.max_cps, max_duration_seconds: r.max_call_seconds };
    out.print(
      `account ${r.id}: concurrency ${caps.concurrency}, cps ${caps.cps}, max duration ${caps.max_duration_seconds} s`,
      {
        uuid: r.id,
        caps,
      },
    );
  },

  async 'wallet topup'(db, args, out) {
    new Flags(args).done();
    const a = await account(db, args.positional[0]);
    const amount = money(args.positional[1], 'AMOUNT');
    if (amount <= 0) throw new UsageError('AMOUNT must be more than 0.00');
    const r = await post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: amount });
    const result = { uuid: a.id, balance: formatMoney(r.balanceAfterCents), currency: CURRENCY };
    out.print(`account ${a.id}: +${formatMoney(amount)}, balance ${result.balance} ${CURRENCY}`, result);
  },

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

  async 'trunks add'(db, args, out) {
    const f = new Flags(args);
    const name = f.string('name', { required: true })!;
    const host = f.string('host', { required: true })!;
    const port = f.int('port', { min: 1, max: 65535 }) ?? 5060;
    const transport = f.string('transport', { default: 'udp' })!;
    const username = f.string('username') ?? null;
    const password = f.string('password') ?? null;
    const inbound = (f.string('inbound') ?? host)
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    f.done();
    if (!['udp', 'tcp', 'tls'].includes(transport))
      throw new UsageError(`--transport must be udp, tcp or tls, not ${transport}`);
    if (!/^[A-Za-z0-9._-]+$/.test(host))
      throw new UsageError(`--host must be a host name or address, not ${JSON.stringify(host)}`);
    if ((username === null) !== (password === null)) throw new UsageError('--username and --password go together');
    for (const addr of inbound) {
      if (!/^[0-9a-fA-F.:]+(\/\d{1,3})?$/.test(addr))
        throw new UsageError(`--inbound takes addresses or CIDR ranges, not ${addr}`);
    }
    const t = await insertTrunk(db, {
      name,
      host,
      port,
      transport: transport as 'udp',
      username,
      password,
      inbound_addresses: inbound,
    });
    const shown = { ...t, password: t.password ? '***' : null };
    out.print(
      `trunk ${t.name} -> ${t.transport}:${t.host}:${t.port}, inbound from ${t.inbound_addresses.join(', ')}`,
      shown,
    );
  },

  async 'trunks list'(db, args, out) {
    new Flags(args).done();
    const rows = (await listTrunks(db)).map((t) => ({ ...t, password: t.password ? '***' : null }));
    out.print(
      rows
        .map((t) => `${t.name.padEnd(16)} ${t.transport}:${t.host}:${t.port}  inbound ${t.inbound_addresses.join(',')}`)
        .join('\n') || '(no trunks)',
      rows,
    );
  },

  async 'trunks remove'(db, args, out) {
    new Flags(args).done();
    const name = args.positional[0];
    if (!name) throw new UsageError('a trunk name is required');
    if (!(await removeTrunk(db, name))) throw new UsageError(`no trunk named ${name}`);
    out.print(`trunk ${name} removed`, { removed: name });
  },

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
      `rate ${r.kind}${r.prefix ? ` +${r.prefix}` : ''}${r.tier ? ` tier ${r.tier}` : ''} = ${shown.amount} ${CURRENCY}`,
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
      rows.map((r) => `${r.kind.padEnd(10)} ${(r.prefix || r.tier || '*').padEnd(12)} ${r.amount}`).join('\n') ||
        '(no rates)',
      rows,
    );
  },

  async 'platform drain'(db, args, out) {
    new Flags(args).done();
    await putSetting(db, 'draining', 'true');
    out.print('platform draining: new calls are refused with PLATFORM.0503; calls in progress continue', {
      draining: true,
    });
  },

  async 'platform resume'(db, args, out) {
    new Flags(args).done();
    await putSetting(db, 'draining', 'false');
    out.print('platform admitting new calls', { draining: false });
  },

  async 'platform status'(db, args, out) {
    new Flags(args).done();
    const draining = (await getSetting(db, 'draining')) === 'true';
    out.print(draining ? 'draining' : 'admitting', { draining });
  },

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

  async 'destinations allow'(db, args, out) {
    new Flags(args).done();
    const a = await account(db, args.positional[0]);
    const prefix = destinationPrefix(args.positional[1]);
    const added = await addDestinationRule(db, a.id, 'allow', prefix);
    out.print(
      `account ${a.id} may call +${prefix}…${added ? '' : ' (already allowed)'}; other destinations are refused`,
      {
        account: a.id,
        allow: prefix,
      },
    );
  },

  async 'destinations block'(db, args, out) {
    new Flags(args).done();
    const prefix = destinationPrefix(args.positional[0]);
    const added = await addDestinationRule(db, null, 'block', prefix);
    out.print(`+${prefix}… is blocked for every account${added ? '' : ' (already blocked)'}`, { block: prefix });
  },

  async 'destinations remove'(db, args, out) {
    const f = new Flags(args);
    const accountId = f.string('account');
    f.done();
    const kind = args.positional[0];
    if (kind !== 'allow' && kind !== 'block') throw new UsageError('KIND must be allow or block');
    const prefix = destinationPrefix(args.positional[1]);
    const a = accountId ? await account(db, accountId) : undefined;
    if (kind === 'allow' && !a) throw new UsageError('an allow rule belongs to an account: give --account ID');
    if (!(await removeDestinationRule(db, a?.id ?? null, kind, prefix)))
      throw new UsageError(`no ${kind} rule for +${prefix}`);
    out.print(`${kind} +${prefix} removed`, { removed: { kind, prefix, account: a?.id ?? null } });
  },

  async 'destinations list'(db, args, out) {
    const f = new Flags(args);
    const accountId = f.string('account');
    f.done();
    const rows = await listDestinationRules(db, accountId ? (await account(db, accountId)).id : undefined);
    out.print(
      rows.map((r) => `${r.kind.padEnd(6)} +${r.prefix.padEnd(14)} ${r.account_id ?? '(platform)'}`).join('\n') ||
        '(no rules)',
      rows,
    );
  },

  async 'bans list'(db, args, out) {
    const f = new Flags(args);
    const all = f.bool('all');
    f.done();
    const rows = await listBans(db, { includeExpired: all });
    out.print(
      rows
        .map((b) => `${b.address.padEnd(40)} ${b.reason.padEnd(14)} until ${b.expires_at}  dropped ${b.hits}`)
        .join('\n') || '(no bans in force)',
      rows,
    );
  },

  async 'bans lift'(db, args, out) {
    new Flags(args).done();
    const address = args.positional[0];
    if (!address) throw new UsageError('an address is required');
    if (!(await liftBan(db, address))) throw new UsageError(`${address} is not banned`);
    out.print(`ban on ${address} lifted; the running switch lets it in within a few seconds`, { lifted: address });
  },

  async 'bans add'(db, args, out) {
    const f = new Flags(args);
    const seconds = f.int('seconds', { min: 1, max: 365 * 86400 }) ?? 3600;
    f.done();
    const address = args.positional[0];
    if (!address) throw new UsageError('an address is required');
    const ban = await addBan(db, { address, seconds });
    out.print(`${ban.address} banned until ${ban.expires_at}`, ban);
  },

  async 'stream token'(db, args, out) {
    new Flags(args).done();
    const minted = await mintStaffStreamToken(db);
    out.print(`staff stream token (single use, ${minted.ttl_seconds} s): ${minted.token}`, minted);
  },

  async 'config table'(_db, args, out) {
    new Flags(args).done();
    out.print(configTable(), { table: configTable() });
  },

  async 'docs codes'(_db, args, out) {
    new Flags(args).done();
    const file = path.join(import.meta.dirname, '..', 'docs', 'events.md');
    writeFileSync(file, withGeneratedCodes(readFileSync(file, 'utf8')));
    out.print(`${file}: event and reason code tables rewritten from events/catalogue.ts`, { file });
  },
};

export const COMMAND_NAMES = Object.keys(commands);

/** Register a command from another room (bans, stream tokens) without this file importing it. */
export function registerCommand(name: string, fn: Command): void {
  commands[name] = fn;
}

export function findCommand(words: string[]): { fn: Command; rest: string[] } | undefined {
  const two = `${words[0]} ${words[1]}`;
  if (commands[two]) return { fn: commands[two], rest: words.slice(2) };
  return undefined;
}
