/** A real SipApplication + Registrar on 127.0.0.1 over a migrated SQLite store, and phone tokens minted as the API does. */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../config/index.js';
import { EventBus, EventPublisher } from '../../events/index.js';
import { signPhoneToken } from '../../sip/index.js';
import { insertAccount, insertEndUser, insertPhoneToken, type Db, type EndUserRow } from '../../store/index.js';
import { SipApplication } from '../../sip/sip-app.js';
import { Registrar, type RegistrarOptions } from '../../sip/registrar.js';
import { shortPassword } from '../../sip/registrar-credentials.js';
import type { Clock, ListenOptions } from '../../sip/stack/index.js';
import { sqliteDb } from '../support/db.js';
import { quietLogger } from '../support/logger.js';

export const SECRET = 'registrar-test-secret-0123456789abcdef';

export interface RegistrarFixture {
  db: Db;
  app: SipApplication;
  registrar: Registrar;
  events: Array<{ accountId: string | null; code: string; data: Record<string, unknown> }>;
  close(): Promise<void>;
}

export async function startRegistrar(opts: {
  port: number;
  clock?: Clock;
  tcp?: boolean;
  extra?: Partial<RegistrarOptions>;
  /** Another store and server secret (an API harness's), left open by close(). */
  db?: Db;
  secret?: string;
  /** More transports for the switch (ws, tls...). */
  listen?: Partial<ListenOptions>;
  /** More settings (SIMU_* variables). */
  env?: Record<string, string>;
}): Promise<RegistrarFixture> {
  const db = opts.db ?? (await sqliteDb.open());
  const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-reg-'));
  const config = loadConfig(
    {
      SIMU_DATA_DIR: dir,
      SIMU_SIP_HOST: '127.0.0.1',
      SIMU_SIP_PORT: String(opts.port),
      SIMU_LOG_LEVEL: 'silent',
      ...opts.env,
    },
    dir,
  );
  const logger = quietLogger;
  const app = new SipApplication({ db, config, logger });
  const bus = new EventBus();
  const publisher = new EventPublisher({ db, bus, logger });
  const events: RegistrarFixture['events'] = [];
  bus.observe((e) => events.push({ accountId: e.accountId, code: e.frame.code, data: e.frame.data ?? {} }));
  const registrar = new Registrar({
    app,
    db,
    secret: opts.secret ?? SECRET,
    logger,
    events: publisher,
    clock: opts.clock,
    ...opts.extra,
  });
  await registrar.start();
  await app.listen(opts.listen);
  return {
    db,
    app,
    registrar,
    events,
    async close() {
      await registrar.close();
      await app.close();
      if (!opts.db) await db.destroy();
    },
  };
}

/** Mints a phone token the way POST /api/phone-tokens/mint does (api/routes/phone-tokens.ts). */
export async function mintPhoneToken(
  db: Db,
  user: EndUserRow,
  opts: { ttlSeconds?: number; maxConcurrent?: number; now?: number } = {},
): Promise<{ token: string; tokenId: string }> {
  const issuedAt = Math.floor((opts.now ?? Date.now()) / 1000);
  const expiresAt = issuedAt + (opts.ttlSeconds ?? 3600);
  const row = await insertPhoneToken(db, {
    account_id: user.account_id,
    end_user_id: user.id,
    extension_number: user.extension_number,
    max_concurrent: opts.maxConcurrent ?? 1,
    expires_at: new Date(expiresAt * 1000).toISOString(),
    issued_at: issuedAt,
  });
  const token = await signPhoneToken(
    SECRET,
    {
      tokenId: row.id,
      accountId: user.account_id,
      endUserId: user.id,
      extension: user.extension_number,
      maxConcurrent: row.max_concurrent,
      expiresAt,
    },
    issuedAt,
  );
  return { token, tokenId: row.id };
}

/** An account with one end-user (extension 1001) holding one valid token. */
export async function accountWithPhone(db: Db, name = 'acme') {
  const account = await insertAccount(db, name);
  const user = await insertEndUser(db, account.id, `${name}@example.com`, name);
  let minted = await mintPhoneToken(db, user);
  // SIPp reads a password starting with 0x as hex: about 1 token in 4,096 has such a short form, so SIPp tests
  // would fail on it. Such a phone gets another token (the first stays valid and unused).
  while (shortPassword(minted.token).startsWith('0x')) minted = await mintPhoneToken(db, user);
  const { token, tokenId } = minted;
  return { account, user, token, tokenId };
}
