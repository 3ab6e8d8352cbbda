import { randomUUID } from 'node:crypto';
import type { Db } from './db.js';
import { isPostgres, pgConnectionString } from './db.js';
import { openListenConnection } from './listen-connection.js';
import { firstRow, insertRows, runSqlCount } from './fixed-sql.js';

/** Commands for the node holding a call (a hangup, a redirect), addressed to that node. */
export const COMMANDS_CHANNEL = 'simu_commands';
/** Replies to commands, addressed to the node that asked. */
export const REPLIES_CHANNEL = 'simu_replies';
/** Every node's call events, for the other nodes' stream sockets. */
export const EVENTS_CHANNEL = 'simu_events';
export type NodeChannelName = typeof COMMANDS_CHANNEL | typeof REPLIES_CHANNEL | typeof EVENTS_CHANNEL;

/** A NOTIFY payload must stay under 8,000 bytes; a larger message is stored in node_messages and sent by id. */
const PAYLOAD_MAX_BYTES = 7000;
/** How long a stored large message is kept for its receivers. */
const MESSAGE_KEEP_MS = 60_000;
const SWEEP_MS = 30_000;

/** A message between nodes: `to` absent is for every other node. */
export interface NodeMessage {
  from: string;
  to?: string;
  /** The request's id, which its reply repeats. */
  id?: string;
  body: unknown;
}

/** What the call engine and the event relay need of the channel; unit tests give an in-memory one. */
export interface NodeLink {
  readonly nodeId: string;
  /** Sends in order after everything sent before; never throws (a message that cannot be sent is lost). */
  send(channel: NodeChannelName, msg: Omit<NodeMessage, 'from'>): void;
  /** Messages other nodes sent on the channel to this node or to every node. */
  on(channel: NodeChannelName, fn: (msg: NodeMessage) => void): void;
}

/** Wire form: short keys, since every byte counts against the payload limit. */
interface Wire {
  f: string;
  t?: string;
  i?: string;
  b?: unknown;
  /** A node_messages row holding `b`. */
  r?: string;
}

/**
 * The channel between nodes sharing a PostgreSQL store: LISTEN/NOTIFY on a connection of its own
 * (store/listen-connection.ts). Messages are sent on that same connection
 * one batch at a time, all NOTIFYs of a batch in one statement, so one node's messages arrive in the order sent. A
 * lost connection is opened again after a second; what was sent or published meanwhile is lost (a command's asker
 * times out; a stream misses those frames). Undefined on SQLite: one box has no other node.
 */
export function openNodeChannel(
  db: Db,
  nodeId: string,
  onError: (err: unknown) => void,
): (NodeLink & { ready: Promise<void>; close(): Promise<void> }) | undefined {
  if (!isPostgres(db)) return undefined;
  const connectionString = pgConnectionString(db)!;
  const handlers = new Map<string, Array<(m: NodeMessage) => void>>();
  let stopped = false;
  const queue: Array<[string, Wire]> = [];
  let pumping: Promise<void> | undefined;
  const kick = (): void => {
    if (pumping) return;
    pumping = pump().finally(() => {
      pumping = undefined;
      if (queue.length > 0 && !stopped) kick();
    });
  };

  const deliver = (channel: string, w: Wire, body: unknown): void => {
    const msg: NodeMessage = { from: w.f, to: w.t, id: w.i, body };
    for (const fn of handlers.get(channel) ?? []) {
      try {
        fn(msg);
      } catch (err) {
        onError(err);
      }
    }
  };
  /** Per sender: the delivery in progress that its later messages wait behind (a large body being read). */
  const reading = new Map<string, Promise<void>>();
  const received = (channel: string, payload: string | undefined): void => {
    let w: Wire;
    try {
      w = JSON.parse(payload ?? '') as Wire;
    } catch {
      return;
    }
    if (w.f === nodeId || (w.t !== undefined && w.t !== nodeId)) return;
    // A sender's messages are delivered in the order sent: behind one whose body is being read, the next wait.
    const behind = reading.get(w.f);
    if (w.r === undefined && !behind) return deliver(channel, w, w.b);
    const ref = w.r;
    const next = (behind ?? Promise.resolve())
      .then(async () => {
        if (ref === undefined) return deliver(channel, w, w.b);
        const row = (await firstRow(db, 'select "body" from "node_messages" where "id" = ? limit 1', [ref])) as
          { body: string } | undefined;
        if (row) deliver(channel, w, JSON.parse(row.body));
      })
      .catch(onError)
      .finally(() => {
        if (reading.get(w.f) === next) reading.delete(w.f);
      });
    reading.set(w.f, next);
  };

  const pump = async (): Promise<void> => {
    while (queue.length > 0 && !stopped) {
      const batch = queue.splice(0, 50);
      if (!conn.listening) continue; // lost while not connected
      const values: string[] = [];
      for (const [channel, w] of batch) {
        let text = JSON.stringify(w);
        if (Buffer.byteLength(text) > PAYLOAD_MAX_BYTES) {
          const id = randomUUID();
          try {
            await insertRows(db, 'node_messages', [
              { id, body: JSON.stringify(w.b), created_at: new Date().toISOString() },
            ]);
          } catch (err) {
            onError(err);
            continue;
          }
          text = JSON.stringify({ ...w, b: undefined, r: id });
        }
        values.push(channel, text);
      }
      if (values.length === 0) continue;
      const calls = values.filter((_, i) => i % 2 === 0).map((_, i) => `pg_notify($${2 * i + 1}, $${2 * i + 2})`);
      await conn.query(`select ${calls.join(', ')}`, values).catch(onError);
    }
  };

  const conn = openListenConnection({
    connectionString,
    channels: [COMMANDS_CHANNEL, REPLIES_CHANNEL, EVENTS_CHANNEL],
    onNotification: (n) => received(n.channel, n.payload),
    onError,
  });

  const sweep = setInterval(() => {
    runSqlCount(
      db,
      'delete from "node_messages" where "created_at" < ?',
      [new Date(Date.now() - MESSAGE_KEEP_MS).toISOString()],
      'node_messages',
    ).catch(() => undefined);
  }, SWEEP_MS);
  sweep.unref();

  return {
    nodeId,
    ready: conn.ready,
    send(channel, msg) {
      if (stopped) return;
      queue.push([channel, { f: nodeId, t: msg.to, i: msg.id, b: msg.body }]);
      kick();
    },
    on(channel, fn) {
      const list = handlers.get(channel) ?? [];
      list.push(fn);
      handlers.set(channel, list);
    },
    async close() {
      await pumping;
      stopped = true;
      clearInterval(sweep);
      await conn.stop();
    },
  };
}
