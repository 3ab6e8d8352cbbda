import type { Command, CommandGroup, OfflineCommand } from './command.js';
import { accountCommands } from './commands/account.js';
import { walletCommands } from './commands/wallet.js';
import { prepaidCommands } from './commands/prepaid.js';
import { numbersCommands } from './commands/numbers.js';
import { trunksCommands } from './commands/trunks.js';
import { ratesCommands } from './commands/rates.js';
import { routesCommands } from './commands/routes.js';
import { platformCommands } from './commands/platform.js';
import { keysCommands } from './commands/keys.js';
import { destinationsCommands } from './commands/destinations.js';
import { bansCommands } from './commands/bans.js';
import { streamCommands } from './commands/stream.js';
import { configCommands } from './commands/config.js';
import { docsCommands } from './commands/docs.js';
import { assetsCommands } from './commands/assets.js';
import { portalUserCommands } from './commands/portal-user.js';
import { cdrCommands } from './commands/cdr.js';
import { metricsCommands } from './commands/metrics.js';
import { operatorCommands } from './commands/operator.js';
import { backupCommands } from './commands/backup.js';
import { restoreCommands } from './commands/restore.js';
import { serviceCommands } from './commands/service.js';
import { nodeCommands } from './commands/node.js';
import { nodesCommands } from './commands/nodes.js';
import { doctorCommands } from './commands/doctor.js';
import { traceCommands } from './commands/trace.js';

/**
 * Every operator command, merged here from one file per noun (cli/commands/) in the order `simu help` lists them.
 * The list is explicit: a command exists only if its group is in it, so the help and the unknown-command message,
 * both made from it, name every command (before, commands registered by side-effect imports were missing from the
 * unknown-command list).
 */
export const COMMAND_GROUPS: readonly CommandGroup[] = [
  accountCommands,
  walletCommands,
  prepaidCommands,
  numbersCommands,
  trunksCommands,
  ratesCommands,
  routesCommands,
  platformCommands,
  keysCommands,
  destinationsCommands,
  bansCommands,
  streamCommands,
  configCommands,
  docsCommands,
  assetsCommands,
  portalUserCommands,
  cdrCommands,
  metricsCommands,
  operatorCommands,
  backupCommands,
  restoreCommands,
  serviceCommands,
  nodeCommands,
  nodesCommands,
  doctorCommands,
  traceCommands,
];

type AnyCommand = { online: Command } | { offline: OfflineCommand };

function merge(groups: readonly CommandGroup[]): ReadonlyMap<string, AnyCommand> {
  const all = new Map<string, AnyCommand>();
  for (const g of groups) {
    const entries: [string, AnyCommand][] = [
      ...Object.entries(g.commands).map(([name, fn]): [string, AnyCommand] => [name, { online: fn }]),
      ...Object.entries(g.offline ?? {}).map(([name, fn]): [string, AnyCommand] => [name, { offline: fn }]),
    ];
    for (const [name, fn] of entries) {
      if (name !== g.noun && !name.startsWith(`${g.noun} `))
        throw new Error(`cli: command "${name}" is not of its group's noun ${g.noun}`);
      if (all.has(name)) throw new Error(`cli: command "${name}" is registered twice`);
      all.set(name, fn);
    }
  }
  return all;
}

const COMMANDS = merge(COMMAND_GROUPS);

/** Every command's full name ('account create', ...), in help order. */
export const COMMAND_NAMES: readonly string[] = [...COMMANDS.keys()];

/**
 * The command its first two words name, or its first word alone (`simu backup FILE`): one that opens the store or
 * an offline one, and the words after its name.
 */
export function findCommand(words: string[]): (AnyCommand & { rest: string[] }) | undefined {
  const two = COMMANDS.get(`${words[0]} ${words[1]}`);
  if (two) return { ...two, rest: words.slice(2) };
  const one = COMMANDS.get(words[0] ?? '');
  return one ? { ...one, rest: words.slice(1) } : undefined;
}

/** The text of `simu help`, from each group's lines. */
export function usageText(): string {
  return [
    'usage: simu <command> [options] [--json]',
    '',
    ...COMMAND_GROUPS.map((g) => g.help),
    '',
    'Changes take effect in a running switch at once (it reads them from the store).',
    'Bad input: a message on stderr, exit code 2, nothing written.',
  ].join('\n');
}
