import type { Knex } from 'knex';

type Db = Knex;

/**
 * The handle of a transaction that holds one connection of `db`'s pool without knex's transaction machinery
 * (store/direct-transaction.ts on the switch's SQLite writer, store/pg-transaction.ts on PostgreSQL), which store
 * functions take as their Db:
 *
 * - knex's query builder and `raw` on the handle run on the held connection (`.connection(held)`);
 * - `transaction` on the handle is `nested` (a savepoint), `isTransaction` is true, and knex's client asked for a
 *   connection gives the held one;
 * - anything else reads through to the store's knex instance (its 'query' event included).
 *
 * `check` throws once the transaction has ended.
 */
export function makeTxHandle(
  db: Db,
  held: unknown,
  check: () => void,
  nested: <T>(fn: (tx: Db) => Promise<T>, handle: Db) => Promise<T>,
): Db {
  const builder = ((table: string) => {
    check();
    return db(table).connection(held);
  }) as unknown as Db;
  // As knex's transaction client: asked for a connection, it gives the one the transaction holds.
  const txClient = new Proxy(db.client as object, {
    get(target, prop) {
      if (prop === 'acquireConnection') return () => (check(), Promise.resolve(held));
      if (prop === 'releaseConnection') return () => Promise.resolve();
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const handle: Db = new Proxy(builder, {
    get(_target, prop) {
      switch (prop) {
        case 'raw':
          return (sql: string, bindings?: readonly Knex.RawBinding[]) => {
            check();
            const raw = bindings === undefined ? db.raw(sql) : db.raw(sql, bindings);
            // knex's runner takes a query's own connection when it has one (as the builder's .connection() sets).
            (raw as unknown as { _connection: unknown })._connection = held;
            return raw;
          };
        case 'transaction':
          return <T>(fn: (tx: Db) => Promise<T>) => (check(), nested(fn, handle));
        case 'isTransaction':
          return true;
        case 'client':
          return txClient;
        case 'transactionProvider':
        case 'destroy':
          throw new Error(`store: ${String(prop)} is not available inside a transaction`);
        default: {
          const v = Reflect.get(db, prop) as unknown;
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(db) : v;
        }
      }
    },
  });
  return handle;
}
