/**
 * What a call's settlement (billing/settlement.ts settleCall) costs the switch: `calls` answered calls of one account,
 * each with its live credit row, settled `concurrency` at a time, as the credit monitor settles ended calls. Prints,
 * per round, the store statements per settlement (transaction control left out), this process's CPU per settlement
 * and the wall time; at the end the ledger's net against the balance.
 *
 *   npx tsx bench/billing/settlement.bench.ts [calls=3000] [rounds=4] [store=sqlite|postgres] [concurrency=16]
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { getAccount, insertAccount, insertCallCredit, migrate, nowIso, openDb } from '../../store/index.js';
import { driverOf } from '../../store/db.js';
import { post, settleCall } from '../../billing/index.js';
import { insertOutboundCall } from '../../test/support/outbound-call.js';

const CALLS = Number(process.argv[2] ?? 3000);
const ROUNDS = Number(process.argv[3] ?? 4);
const STORE = process.argv[4] ?? 'sqlite';
const CONCURRENCY = Number(process.argv[5] ?? 16);

let url = '';
if (STORE === 'postgres') {
  const { newPostgresDatabase } = await import('../../test/support/db.js');
  url = await newPostgresDatabase();
}
const db = openDb({ databaseUrl: url, dataDir: mkdtempSync(path.join(os.tmpdir(), 'settlement-')) });
await migrate(db);
const account = await insertAccount(db, 'bench');
await post(db, { accountId: account.id, direction: 'credit', kind: 'topup', amountCents: 1_000_000_000 });

let statements = 0;
driverOf(db).onStatement((s) => {
  if (!/^\s*(begin|commit|rollback|savepoint|release)\b/i.test(s.sql)) statements++;
});

console.log(`settlement bench: store ${STORE}, ${CALLS} calls a round, ${CONCURRENCY} at a time`);
console.log('| round | statements/settlement | CPU µs/settlement | wall ms |');
console.log('|---|---|---|---|');
for (let round = 1; round <= ROUNDS; round++) {
  const calls: string[] = [];
  for (let i = 0; i < CALLS; i++) {
    const call = await insertOutboundCall(db, account.id);
    const at = nowIso();
    await insertCallCredit(db, {
      call_id: call.id,
      account_id: account.id,
      node_id: null,
      rate_cents_per_minute: 10,
      answered_at: at,
      heartbeat_at: at,
    });
    calls.push(call.id);
  }
  statements = 0;
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < calls.length) {
        const callId = calls[next++]!;
        await settleCall(db, { accountId: account.id, callId, talkCents: 12, ttsCents: 0 });
      }
    }),
  );
  const wall = performance.now() - t0;
  const used = process.cpuUsage(cpu);
  const per = (used.user + used.system) / CALLS;
  console.log(`| ${round} | ${(statements / CALLS).toFixed(2)} | ${per.toFixed(0)} | ${wall.toFixed(0)} |`);
}
const rows = await db('wallet_transactions').where({ account_id: account.id });
const net = rows.reduce(
  (n: number, r: { direction: string; amount_cents: unknown }) =>
    n + (r.direction === 'credit' ? 1 : -1) * Number(r.amount_cents),
  0,
);
const balance = (await getAccount(db, account.id)).balance_cents;
console.log(`balance = ledger net: ${balance} / ${net} ${balance === net ? 'ok' : 'MISMATCH'}`);
await db.destroy();
