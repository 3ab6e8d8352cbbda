import { createRequire } from 'node:module';

/** A PostgreSQL notification as delivered. */
export interface PgNotification {
  channel: string;
  payload?: string;
  /** The server process of the connection that sent it. */
  processId: number;
}

interface PgClient {
  connect(): Promise<void>;
  query(sql: string, values?: unknown[]): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'error', fn: (err: Error) => void): unknown;
  on(event: 'end', fn: () => void): unknown;
  on(event: 'notification', fn: (n: PgNotification) => void): unknown;
}
const pg = createRequire(import.meta.url)('pg') as { Client: new (o: { connectionString: string }) => PgClient };

/** Wait before a lost listener connects again. */
export const RELISTEN_MS = 1000;

export interface ListenOptions {
  connectionString: string;
  /** Channel names (identifiers of the store's own, never customer input). */
  channels: readonly string[];
  onNotification(n: PgNotification): void;
  /**
   * LISTEN is in place: at the first connection and after each reconnection. What was sent while no one listened is
   * lost, so a listener that caches treats everything as changed here.
   */
  onListening?(): void;
  /** A connection lost or refused (it is opened again after RELISTEN_MS). */
  onError(err: unknown): void;
}

/** A connection that listens, and may send on the same connection (statements sent from it keep their order). */
export interface ListenConnection {
  /** Resolved when LISTEN is first in place. */
  readonly ready: Promise<void>;
  /** Whether LISTEN is in place now. */
  readonly listening: boolean;
  /** Runs a statement on the connection; rejects when it is not connected. */
  query(sql: string, values?: unknown[]): Promise<unknown>;
  /** Stops listening and closes the connection; safe to call twice. */
  stop(): Promise<void>;
}

/**
 * PostgreSQL LISTEN on a connection of its own (not a pool's: a listener holds its connection for good). A lost
 * connection is opened again after RELISTEN_MS, for as long as the listener is not stopped.
 */
export function openListenConnection(opts: ListenOptions): ListenConnection {
  let client: PgClient | undefined;
  let listening = false;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((r) => (markReady = r));
  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: opts.connectionString });
    client = c;
    listening = false;
    const lost = (err?: unknown): void => {
      if (client !== c) return;
      client = undefined;
      listening = false;
      void c.end().catch(() => undefined);
      if (stopped) return;
      if (err) opts.onError(err);
      retry = setTimeout(() => void connect(), RELISTEN_MS);
      retry.unref();
    };
    c.on('error', lost);
    c.on('end', () => lost());
    c.on('notification', (n) => opts.onNotification(n));
    try {
      await c.connect();
      await c.query(opts.channels.map((ch) => `LISTEN ${ch}`).join('; '));
    } catch (err) {
      lost(err);
      return;
    }
    if (client !== c) return;
    listening = true;
    opts.onListening?.();
    markReady();
  };
  void connect();
  return {
    ready,
    get listening() {
      return listening;
    },
    query(sql, values) {
      const c = client;
      if (!c || !listening) return Promise.reject(new Error('store: the listening connection is not connected'));
      return c.query(sql, values);
    },
    async stop() {
      stopped = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      listening = false;
      await c?.end().catch(() => undefined);
    },
  };
}
