import type { Db } from './db.js';
import { migrationSource } from './migrations/index.js';

/** Names of the migrations this build has that the store has not run yet (none: the store is current). */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const [, pending] = (await db.migrate.list({ migrationSource })) as [unknown[], Array<{ file?: string } | string>];
  return pending.map((m) => (typeof m === 'string' ? m : (m.file ?? String(m))));
}
