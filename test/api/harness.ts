import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type http from 'node:http';
import { loadConfig, setLogLevel, type Config } from '../../config/index.js';
import { post } from '../../billing/index.js';
import { addPoolNumbers, findNumberByE164, insertAccount, insertApiKey, type Db } from '../../store/index.js';
import { createApiServer, type ApiDeps } from '../../api/index.js';
import { NullCallEngine } from '../support/null-call-engine.js';
import { acquireNumber } from '../../api/number-acquisition.js';
import type { TestDbKind } from '../support/db.js';

export interface Reply {
  status: number;
  body: any;
  text: string;
  headers: Headers;
}

export interface Tenant {
  accountId: string;
  key: string;
}

/** A real API server on 127.0.0.1 (port from the OS) over a fresh store, with the unit-test call engine. */
export class ApiHarness {
  db!: Db;
  config!: Config;
  engine!: NullCallEngine;
  server!: http.Server;
  base!: string;
  health = { store: true, media: true };
  readonly secret = 'test-sign-secret';

  static async start(kind: TestDbKind, extra: Partial<ApiDeps> = {}): Promise<ApiHarness> {
    const h = new ApiHarness();
    setLogLevel('silent');
    h.db = await kind.open();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'simu-api-'));
    // Races and contract tests burst hundreds of requests on one key; test/api/abuse.test.ts tests the limit itself.
    h.config = loadConfig(
      {
        SIMU_DATA_DIR: dataDir,
        SIMU_LOG_LEVEL: 'silent',
        SIMU_API_RATE_PER_SECOND: '100000',
        SIMU_API_RATE_BURST: '100000',
        SIMU_API_ACCOUNT_RATE_PER_SECOND: '100000',
        SIMU_API_ACCOUNT_RATE_BURST: '100000',
        // Customer URLs in these tests name 127.0.0.1 (docs/security.md, "Outbound URLs").
        SIMU_WEBHOOK_ALLOW_PRIVATE: 'true',
      },
      dataDir,
    );
    h.engine = new NullCallEngine(h.db);
    const { server } = createApiServer({
      db: h.db,
      config: h.config,
      calls: h.engine,
      signUrlSecret: h.secret,
      health: async () => h.health,
      ...extra,
    });
    h.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    h.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    h.config.publicBaseUrl = h.base;
    return h;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections?.();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    await this.db?.destroy();
  }

  /** An account with a key, a balance (KES cents) and optionally an owned active number. */
  async tenant(name: string, balanceCents = 100_000, number?: string): Promise<Tenant> {
    const a = await insertAccount(this.db, name);
    const { key } = await insertApiKey(this.db, a.id, 'test');
    if (balanceCents > 0)
      await post(this.db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: balanceCents });
    if (number) {
      await addPoolNumbers(this.db, [number]);
      const n = await findNumberByE164(this.db, number);
      await acquireNumber(this.db, a.id, n!.id);
    }
    return { accountId: a.id, key };
  }

  async req(
    method: string,
    p: string,
    opts: { key?: string | null; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
  ): Promise<Reply> {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    let body: string | undefined;
    if (opts.raw !== undefined) body = opts.raw;
    else if (opts.body !== undefined) body = JSON.stringify(opts.body);
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const res = await fetch(this.base + p, { method, headers, body });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, text, headers: res.headers };
  }
}
