import path from 'node:path';
import { backupSqliteStore } from '../../store/index.js';
import type { Config } from '../../config/index.js';
import { Flags, UsageError } from '../args.js';
import type { CommandGroup } from '../command.js';

const POSTGRES = /^postgres(ql)?:\/\//;

/** The file a command names, resolved against the working directory. */
export function fileArgument(positional: string[], what: string): string {
  const [file, extra] = positional;
  if (!file) throw new UsageError(`${what} is required`);
  if (extra !== undefined) throw new UsageError(`one file only, not also ${JSON.stringify(extra)}`);
  return path.resolve(file);
}

/** PostgreSQL stores are copied by PostgreSQL's own tools; the refusal says which. */
export function refusePostgres(config: Config, what: 'backup' | 'restore'): void {
  if (!POSTGRES.test(config.databaseUrl)) return;
  const tool =
    what === 'backup'
      ? 'pg_dump --format=custom --file=FILE "$SIMU_DATABASE_URL"'
      : 'pg_restore --clean --if-exists --dbname="$SIMU_DATABASE_URL" FILE';
  throw new UsageError(`the store is PostgreSQL: ${what} it with ${tool} (README, "Backups")`);
}

/** Online backup of the SQLite store while the switch runs. */
export const backupCommands: CommandGroup = {
  noun: 'backup',
  help: `  backup FILE                                    copy the running switch's SQLite store to FILE (online, consistent)`,
  commands: {},
  offline: {
    async backup(config, args, out) {
      new Flags(args).done();
      refusePostgres(config, 'backup');
      const file = fileArgument(args.positional, 'the backup file');
      const r = await backupSqliteStore(config.dataDir, file);
      out.print(
        `backed up ${r.pages} pages (${(r.bytes / 1024).toFixed(0)} KiB) to ${r.file} in ${r.ms.toFixed(0)} ms`,
        r,
      );
    },
  },
};
