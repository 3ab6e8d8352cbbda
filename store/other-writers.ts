import { openListenConnection } from './listen-connection.js';
import type { RawConnection } from './sqlite-connection.js';

/** How often the switch asks SQLite whether another connection committed (PRAGMA data_version; a cheap read). */
export const DATA_VERSION_POLL_MS = 50;
/** The PostgreSQL channel the change triggers notify (store/change-notify.ts); the payload is the table's name. */
export const CHANGES_CHANNEL = 'simu_changes';

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

/**
 * PostgreSQL: LISTEN on a connection of its own (store/listen-connection.ts). The change triggers notify the table
 * a committed transaction wrote, at its commit; notifications from this process's own pool connections
 * (`ownBackends`, their server process ids) are skipped, since this process announced those writes itself. Each
 * time LISTEN starts, everything is reported changed (what was cached while no one listened may be stale).
 */
export function listenForChanges(
  connectionString: string,
  ownBackends: ReadonlySet<number>,
  onWrite: OtherWrite,
  onError: (err: unknown) => void,
): { stop(): Promise<void> } {
  return openListenConnection({
    connectionString,
    channels: [CHANGES_CHANNEL],
    onNotification: (n) => {
      if (n.channel === CHANGES_CHANNEL && !ownBackends.has(n.processId)) onWrite(n.payload || undefined);
    },
    onListening: () => onWrite(undefined),
    onError,
  });
}
