import knexFactory, { type Knex } from 'knex';

/**
 * The store as knex sees it: for migrations, for the queries whose filters are built at run time (the calls list
 * and search), and for tests and tools that set rows up directly. The store's own statements go
 * through its driver (store/driver/), not through knex.
 */
export type KnexDb = Knex;
export type KnexBuilder = Knex.QueryBuilder;

/** How long knex's SQLite connection stays open unused (ms). */
const KNEX_IDLE_MS = 2000;

/**
 * SQLite: knex's own connection to the store's file, opened when knex runs a statement (the migrations at start,
 * tests and tools setting rows up) and closed once idle for KNEX_IDLE_MS: the switch's one writing connection is
 * its driver's, and no statement of its running code goes through knex.
 */
export function openKnexSqlite(filename: string): Knex {
  return knexFactory({
    client: 'better-sqlite3',
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      min: 0,
      max: 1,
      idleTimeoutMillis: KNEX_IDLE_MS,
      afterCreate: (conn: { pragma(s: string): unknown }, done: (err: Error | null, conn: unknown) => void) => {
        try {
          conn.pragma('busy_timeout = 5000');
          conn.pragma('foreign_keys = ON');
          done(null, conn);
        } catch (err) {
          done(err as Error, conn);
        }
      },
    },
  });
}

/** PostgreSQL: a small pool of knex's own, opened on demand. */
export function openKnexPg(connectionString: string): Knex {
  return knexFactory({ client: 'pg', connection: connectionString, pool: { min: 0, max: 4 } });
}

/** The text and values of a built query, for the store's driver to run (`?` placeholders on both dialects). */
export function compiled(q: Knex.QueryBuilder): { sql: string; bindings: unknown[] } {
  const { sql, bindings } = q.toSQL();
  return { sql, bindings: [...bindings] };
}
