import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { openDb, migrate, type Db } from '../../store/index.js';
import { postgresDb } from '../support/db.js';
import { eventually } from '../support/wait.js';

/** A migrated SQLite database in a file of its own, re-openable (an outbox restart opens it again). */
export async function fileDb(): Promise<{ db: Db; dir: string; reopen(): Promise<Db> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-events-'));
  const open = async () => {
    const db = openDb({ databaseUrl: '', dataDir: dir, sqliteFile: 'events.db' });
    await migrate(db);
    return db;
  };
  return { db: await open(), dir, reopen: open };
}

/** A fresh PostgreSQL database on the shared test server, re-openable with a new connection pool. */
export async function pgDb(): Promise<{ db: Db; reopen(): Promise<Db> }> {
  const db = await postgresDb.open();
  const c = db.client.config.connection as { user: string; host: string; port: string; database: string };
  const url = `postgres://${c.user}@${c.host}:${c.port}/${c.database}`;
  return { db, reopen: async () => openDb({ databaseUrl: url, dataDir: os.tmpdir() }) };
}

export const STORES = [
  { name: 'sqlite', open: fileDb },
  { name: 'postgres', open: pgDb },
] as const;

export async function seedAccount(db: Db, statusUrl = '', secret = `whsec_${randomUUID()}`): Promise<string> {
  const id = randomUUID();
  await db('accounts').insert({
    id,
    name: `acct-${id.slice(0, 8)}`,
    signing_secret: secret,
    webhook_status: statusUrl,
    created_at: new Date().toISOString(),
  });
  return id;
}

export async function seedCall(
  db: Db,
  accountId: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; sid: string }> {
  const id = randomUUID();
  const sid = `call_${id.replace(/-/g, '').slice(0, 24)}`;
  await db('calls').insert({
    id,
    sid,
    account_id: accountId,
    direction: 'outbound',
    from_number: '+254700000001',
    to_number: '+254700000002',
    status: 'initiated',
    started_at: new Date().toISOString(),
    created_at: new Date().toISOString(),
    ...extra,
  });
  return { id, sid };
}

export interface ReceivedRequest {
  /** The full URL as the sender addressed it: http://127.0.0.1:PORT + path and query. */
  url: string;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  json: any;
  status: number;
  at: number;
}

export type Reply = (r: Omit<ReceivedRequest, 'status'>) => number | 'hang' | Promise<number>;

/** A real HTTP receiver on 127.0.0.1 (port 0) that records every request and answers with `reply`. */
export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  reply: Reply = () => 200;
  readonly #server = http.createServer((req, res) => this.#handle(req, res));
  #base = '';
  /** TCP connections accepted so far. */
  connections = 0;

  async start(): Promise<this> {
    this.#server.on('connection', () => this.connections++);
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', r));
    const a = this.#server.address() as { port: number };
    this.#base = `http://127.0.0.1:${a.port}`;
    return this;
  }

  url(p = '/hook'): string {
    return `${this.#base}${p}`;
  }

  /** Requests answered with a 2xx, first one per event id. */
  delivered(): ReceivedRequest[] {
    const seen = new Set<string>();
    return this.requests.filter(
      (r) => r.status >= 200 && r.status < 300 && !seen.has(r.json.id) && seen.add(r.json.id),
    );
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks);
      let json: any;
      try {
        json = JSON.parse(raw.toString('utf8'));
      } catch {
        json = null;
      }
      const base = { url: `${this.#base}${req.url}`, headers: req.headers, raw, json, at: Date.now() };
      const status = await this.reply(base);
      if (status === 'hang') {
        this.requests.push({ ...base, status: 0 }); // never answers: the sender's attempt timeout must fire
        return;
      }
      this.requests.push({ ...base, status });
      res.writeHead(status, status >= 300 && status < 400 ? { location: this.url('/moved') } : {});
      res.end('ignored');
    });
  }
}

/** Polls `cond` every 10 ms until it holds (test/support/wait.ts `eventually`); rejects after `timeoutMs`. */
export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'condition') {
  await eventually(cond, what, timeoutMs, 10);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
