import { userInfo } from 'node:os';
import type { Db, AccountRow } from '../store/index.js';
import type { Config } from '../config/index.js';
import { findAccount } from '../store/index.js';
import { parseMoney, formatMoney, MoneyFormatError } from '../billing/index.js';
import { OperationError } from '../api/index.js';
import { UsageError, type ParsedArgs } from './args.js';

/**
 * What every operator command is: a function of the store, its parsed arguments and an output that prints either
 * a human line or JSON (--json). Each noun's commands are one file in cli/commands/, merged by cli/registry.ts.
 */
export interface Output {
  json: boolean;
  print(human: string, machine: unknown): void;
  /** A warning for the operator, on stderr whatever the output format (`--json` stays parseable). */
  warn(text: string): void;
  /** Raw text to stdout; resolves when the sink can take more (a streaming command waits for it). */
  write(text: string): Promise<void>;
}

export type Command = (db: Db, args: ParsedArgs, out: Output) => Promise<void>;

/** A command that must not open the store (it installs, copies or replaces it): it gets the configuration. */
export type OfflineCommand = (config: Config, args: ParsedArgs, out: Output) => Promise<void>;

/** One noun's commands ('account create', 'account list', ...) and its lines of the usage text. */
export interface CommandGroup {
  noun: string;
  /** Lines of `simu help`; each names every command of the group in full ("account suspend ID"). */
  help: string;
  commands: Record<string, Command>;
  offline?: Record<string, OfflineCommand>;
}

export const presentAccount = (a: AccountRow) => ({
  uuid: a.id,
  name: a.name,
  wallet_balance: formatMoney(a.balance_cents),
  status: a.status,
});

/** Who the audit log names for an action taken at this command line: cli:USER. */
export function cliActor(): string {
  let user = process.env.SUDO_USER || process.env.USER || '';
  try {
    user ||= userInfo().username;
  } catch {
    /* no passwd entry */
  }
  return `cli:${user || 'unknown'}`;
}

/** Runs one of the shared operator operations (api/operations.ts); its refusal is a usage error here. */
export async function operation<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (e) {
    if (e instanceof OperationError) throw new UsageError(e.message);
    throw e;
  }
}

/** An amount of money from the command line, e.g. 500.00, in cents. */
export function money(value: string | undefined, what: string): number {
  if (value === undefined) throw new UsageError(`${what} is required`);
  try {
    return parseMoney(value);
  } catch (e) {
    if (e instanceof MoneyFormatError) throw new UsageError(`${what}: ${e.message}`);
    throw e;
  }
}

/** The account a command names by id, or a usage error. */
export async function account(db: Db, id: string | undefined): Promise<AccountRow> {
  if (!id) throw new UsageError('an account id is required');
  const a = await findAccount(db, id);
  if (!a) throw new UsageError(`no account with id ${id}`);
  return a;
}
