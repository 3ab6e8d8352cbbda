import knexFactory from 'knex';
import { isPostgres, type Db } from './db.js';

/**
 * Extra read-only SQLite connections for the hot read paths (authentication, calls list, get call). The store
 * keeps one connection so that SQLite writes serialise cleanly (store/db.ts); with WAL, readers on their own
 * connections run beside it and beside each other, each seeing the last committed state, so a request never
 * waits behind another request's read. PostgreSQL already has a pool: no extra pool there.
 */
export function openReadPool(db: Db, size = 4): Db | undefined {
  if (isPostgres(db)) return undefined;
  const filename = (db.client.config.connection as { filename?: string } | undefined)?.filename;
  if (!filename || filename === ':memory:') return undefined;
  return knexFactory({
    client: 'sqlite3',
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      min: 0,
      max: size,
      afterCreate: (conn: any, done: (err: Error | null, conn: unknown) => void) => {
        conn.exec('PRAGMA busy_timeout = 5000; PRAGMA query_only = 1;', (err: Error | null) => done(err, conn));
      },
    },
  });
}
