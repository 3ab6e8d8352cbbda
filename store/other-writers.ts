import type { RawConnection } from './sqlite-connection.js';

/** How often the switch asks SQLite whether another connection committed (PRAGMA data_version): ~5 µs a time. */
export const DATA_VERSION_POLL_MS = 50;
/** The PostgreSQL channel the change triggers notify (store/change-notify.ts); the payload is the table's name. */
export const CHANGES_CHANNEL = 'simu_changes';
/** Wait before a lost PostgreSQL listener connects again. */
const RELISTEN_MS = 1000;

/**
 * What another process wrote: the table, or undefined when the store cannot say which (SQLite; a listener that
 * lost its connection and may have missed some).
 */
export type OtherWrite = (table: string | undefined) => void;

/**
 * SQLite: PRAGMA data_version on the switch's writer connection changes when any other connection (the CLI,
 * another process) commits, never for this connection's own commits nor for a passive checkpoint. The statement is
 * prepared on the connection as opened, before the group commit's wrapper, which commits the open group before
 * any PRAGMA; read-only, it runs inside the group as well as outside it.
 */
export function pollDataVersion(conn: RawConnection, onWrite: OtherWrite): DataVersionPoll {
  const version = conn.prepare('PRAGMA data_version');
  const read = (): unknown => (version.get() as { data_version: number }).data_version;
  let last = read();
  const timer = setInterval(() => {
    let now;
    try {
      now = read();
    } catch {
      return; // the connection is closing; the next poll (if any) tries again
    }
    if (now !== last) {
      last = now;
      onWrite(undefined);
    }
  }, DATA_VERSION_POLL_MS);
  timer.unref();
  return {
    stop: () => clearInterval(timer),
    absorb: () => {
      try {
        last = read();
      } catch {
        // closing
      }
    },
  };
}

export interface DataVersionPoll {
  stop(): void;
  /** Takes the version as it is now without reporting it: a commit of this process's own other connection (knex's). */
  absorb(): void;
}

/** The pg client as used here (the driver is the one knex loaded: its client's `driver`). */
interface PgClient {
  connect(): Promise<void>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'error', fn: (err: Error) => void): unknown;
  on(event: 'end', fn: () => void): unknown;
  on(event: 'notification', fn: (n: { channel: string; payload?: string; processId: number }) => void): unknown;
}
export interface PgDriver {
  Client: new (options: { connectionString: string }) => PgClient;
}

/**
 * PostgreSQL: LISTEN on a connection of its own (not the pool's: a listener holds it for good). The change triggers
 * notify the table a committed transaction wrote, at its commit; notifications from this process's own pool
 * connections (`ownBackends`, their server process ids) are skipped, since its knex instance already saw those
 * writes. A lost connection is opened again after RELISTEN_MS; each time LISTEN starts, everything is reported
 * changed (what was cached while no one listened may be stale).
 */
export function listenForChanges(
  driver: PgDriver,
  connectionString: string,
  ownBackends: ReadonlySet<number>,
  onWrite: OtherWrite,
  onError: (err: unknown) => void,
): { stop(): Promise<void> } {
  let client: PgClient | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async (): Promise<void> => {
    const c = new driver.Client({ connectionString });
    client = c;
    const lost = (err?: unknown): void => {
      if (client !== c) return;
      client = undefined;
      void c.end().catch(() => undefined);
      if (stopped) return;
      if (err) onError(err);
      retry = setTimeout(() => void connect(), RELISTEN_MS);
      retry.unref();
    };
    c.on('error', lost);
    c.on('end', () => lost());
    c.on('notification', (n) => {
      if (n.channel === CHANGES_CHANNEL && !ownBackends.has(n.processId)) onWrite(n.payload || undefined);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANGES_CHANNEL}`);
    } catch (err) {
      lost(err);
      return;
    }
    // What was cached while no one listened (before the first LISTEN, or while the connection was lost) may be stale.
    onWrite(undefined);
  };
  void connect();
  return {
    async stop() {
      stopped = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}
