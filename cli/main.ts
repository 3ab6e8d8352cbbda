import { loadConfig, ConfigError } from '../config/index.js';
import { openDb, migrate } from '../store/index.js';
import { parseArgs, UsageError } from './args.js';
import { findCommand, COMMAND_NAMES, usageText } from './registry.js';
import type { Output } from './command.js';

interface Sink {
  write(text: string): unknown;
  once?(event: 'drain', listener: () => void): unknown;
}

/** Writes and, when the sink's buffer is full (write returned false), waits for it to drain. */
function writeWhenReady(sink: Sink, text: string): Promise<void> {
  if (sink.write(text) !== false || !sink.once) return Promise.resolve();
  return new Promise((resolve) => sink.once!('drain', resolve));
}

export async function runCli(argv: string[], io: { stdout: Sink; stderr: Sink } = process): Promise<number> {
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help') {
    io.stdout.write(usageText() + '\n');
    return argv.length === 0 ? 2 : 0;
  }
  let db;
  try {
    const parsed = parseArgs(argv, ['json', 'all', 'force', 'dry-run', 'wait']);
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
      warn: (text) => io.stderr.write(`simu: warning: ${text}\n`),
      write: (text) => writeWhenReady(io.stdout, text),
    };
    const config = loadConfig();
    const args = { positional: found.rest, flags: parsed.flags };
    if ('offline' in found) {
      await found.offline(config, args, out);
      return 0;
    }
    db = openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
    await migrate(db);
    await found.online(db, args, out);
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
