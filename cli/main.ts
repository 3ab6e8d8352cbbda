import { loadConfig, ConfigError } from '../config/index.js';
import { openDb, migrate } from '../store/index.js';
import { parseArgs, UsageError } from './args.js';
import { findCommand, COMMAND_NAMES, type Output } from './commands.js';
import './assets.js'; // registers `assets ...` and `account retention`
import './portal-users.js'; // registers `portal-user add`

const USAGE = `usage: simu <command> [options] [--json]

  account create --name N [--balance 100.00]     create an account; prints it and its first API key (once)
  account list | suspend ID | resume ID
  account caps ID [--concurrency N] [--cps N] [--max-duration SECONDS]
  account retention ID --days N|default           days new recordings of the account are kept
  wallet topup ID AMOUNT                         credit the wallet, e.g. 500.00 (KES)
  numbers add +E164 [--count N] | numbers list   the pool of acquirable numbers
  trunks add --name N --host H [--port 5060] [--transport udp|tcp|tls] [--username U --password P]
             [--inbound ADDR[,CIDR...]]          a carrier: where outbound calls go, where inbound come from
  trunks list | trunks remove NAME
  rates set KIND AMOUNT [--prefix DIGITS] [--tier T]   KIND: outbound, inbound, internal (per minute),
                                                 tts (per second), did_setup (once)
  rates list
  platform drain | resume | status               stop or restart admitting new calls
  keys create ID --name N                        another API key for an account
  destinations allow ID PREFIX | destinations block PREFIX     toll-fraud controls: an account with allow
  destinations remove allow|block PREFIX [--account ID]        rules reaches only those prefixes; block
  destinations list [--account ID]                             prefixes are refused for every account
  bans list [--all] | bans lift ADDR | bans add ADDR [--seconds N]   SIP sources banned for floods,
                                                 brute force or scanning (docs/security.md)
  stream token                                   a single-use staff token for {ws}/api/stream (all
                                                 accounts' events and PLATFORM.0001)
  config table                                   every setting with its default
  docs codes                                     rewrite docs/events.md's code tables from the catalogue
  assets list ID | assets upload ID FILE --name N   account audio for <Play asset="N"> (docs/assets.md)
  assets rename ID ASSET --to N | assets activate|deactivate|delete ID ASSET   (ASSET: uuid or name)
  portal-user add ID --email E --password P      a web portal sign-in; prints the otpauth:// URI (once)

Changes take effect in a running switch at once (it reads them from the store).
Bad input: a message on stderr, exit code 2, nothing written.`;

interface Sink {
  write(text: string): unknown;
}

export async function runCli(argv: string[], io: { stdout: Sink; stderr: Sink } = process): Promise<number> {
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help') {
    io.stdout.write(USAGE + '\n');
    return argv.length === 0 ? 2 : 0;
  }
  let db;
  try {
    const parsed = parseArgs(argv, ['json', 'all']);
    const found = findCommand(parsed.positional);
    if (!found)
      throw new UsageError(
        `unknown command "${parsed.positional.slice(0, 2).join(' ')}"; commands: ${COMMAND_NAMES.join(', ')}`,
      );
    const json = parsed.flags.get('json') === true;
    parsed.flags.delete('json');
    const out: Output = {
      json,
      print: (human, machine) => io.stdout.write((json ? JSON.stringify(machine) : human) + '\n'),
    };
    const config = loadConfig();
    db = openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
    await migrate(db);
    await found.fn(db, { positional: found.rest, flags: parsed.flags }, out);
    return 0;
  } catch (e) {
    if (e instanceof UsageError || e instanceof ConfigError) {
      io.stderr.write(`simu: ${e.message}\n`);
      return 2;
    }
    const err = e as { code?: string; message?: string };
    if (err?.code && /^[A-Z_]+$/.test(err.code) && err.code !== 'SQLITE_ERROR') {
      io.stderr.write(`simu: ${err.message} (${err.code})\n`);
      return 2;
    }
    io.stderr.write(`simu: internal error: ${err?.message ?? e}\n`);
    return 1;
  } finally {
    await db?.destroy();
  }
}
