import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config/index.js';
import {
  insertAccountWithApiKey,
  addPoolNumbers,
  listAccounts,
  listRates,
  setRate,
  randomToken,
  type Db,
} from '../store/index.js';
import { post } from '../billing/index.js';

/**
 * The server secret signs phone tokens and recording download URLs. It is generated once into the data
 * directory (mode 0600) so restarts keep tokens and URLs valid.
 */
export function loadServerSecret(dataDir: string): string {
  const file = path.join(dataDir, 'server-secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomToken(32);
  writeFileSync(file, secret + '\n', { mode: 0o600 });
  return secret;
}

/** Starter rates of a new install (KES): a catch-all outbound per minute, inbound and internal per minute, speech per
 * second, the number setup fee. */
export const DEMO_RATES: Array<['outbound' | 'inbound' | 'internal' | 'tts' | 'did_setup', number]> = [
  ['outbound', 300],
  ['inbound', 100],
  ['internal', 0],
  ['tts', 1],
  ['did_setup', 10000],
];

export interface FirstRunResult {
  accountId: string;
  apiKey: string;
  numbers: number;
}

/**
 * On the very first run (no account in the store) create a demo account with an opening balance and add the demo
 * numbers to the pool. The API key is returned to be printed once; only its hash is stored.
 */
export async function firstRun(db: Db, config: Config): Promise<FirstRunResult | undefined> {
  if ((await listAccounts(db)).length > 0) return undefined;
  const { account: acct, key } = await insertAccountWithApiKey(db, 'Demo', 'demo');
  await post(db, {
    accountId: acct.id,
    direction: 'credit',
    kind: 'topup',
    amountCents: 100_000,
    settlementKey: `demo-topup:${acct.id}`,
  });
  const numbers = await addPoolNumbers(db, config.demo.numbers);
  if ((await listRates(db)).length === 0) {
    // Starter rates so the demo can place calls; the operator replaces them with `simu rates set`.
    for (const [kind, cents] of DEMO_RATES) await setRate(db, kind, cents);
  }
  return { accountId: acct.id, apiKey: key, numbers };
}

export function firstRunMessage(r: FirstRunResult, config: Config): string {
  const base = config.publicBaseUrl;
  return [
    '',
    '  Simu first run: a demo account was created with 1000.00 KES.',
    `  account: ${r.accountId}`,
    `  API key (shown only now; only its hash is stored): ${r.apiKey}`,
    `  ${r.numbers} demo numbers are in the pool.`,
    '',
    '  Try it:',
    `    curl -H "Authorization: Bearer ${r.apiKey}" ${base}/api/account/`,
    `    curl -H "Authorization: Bearer ${r.apiKey}" ${base}/api/numbers/available`,
    '',
    '  Operator commands: bin/simu --help',
    '',
  ].join('\n');
}
