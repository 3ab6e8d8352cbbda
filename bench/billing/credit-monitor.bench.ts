/**
 * How much the live credit monitor costs: the synchronous tick over N live calls (it runs every 250 ms), and
 * settlements per second on the one-box store (SQLite). Run: npx tsx bench/billing/credit-monitor.bench.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { CreditMonitor, RateBook, post, settleCall } from '../../billing/index.js';
import type { Clock } from '../../kit/index.js';
import { openDb, migrate, insertAccount, setRate } from '../../store/index.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-bench-billing-'));
const db = openDb({ databaseUrl: '', dataDir: dir });
await migrate(db);
await setRate(db, 'outbound', 120, '254');

let now = Date.parse('2026-01-01T00:00:00Z');
const timers: Pick<Clock, 'now' | 'every'> = { now: () => now, every: () => ({ cancel: () => undefined }) };
const rows: Array<Record<string, string | number>> = [];

for (const n of [100, 1000, 5000]) {
  const monitor = new CreditMonitor({
    db,
    rates: new RateBook(db, { clock: { now: () => now } }),
    clock: timers,
    cut: () => undefined,
    emit: () => undefined,
    balanceRefreshMs: 1e12,
    heartbeatPersistMs: 1e12,
  });
  // 100 calls per account, like a busy call centre's accounts.
  let accountId = '';
  for (let i = 0; i < n; i++) {
    if (i % 100 === 0) {
      accountId = (await insertAccount(db, `bench-${n}-${i}`)).id;
      await post(db, { accountId, direction: 'credit', kind: 'topup', amountCents: 1e9 });
    }
    await monitor.callAnswered({
      callId: `c-${n}-${i}`,
      accountId,
      direction: 'outbound',
      to: '+254700',
      answeredAt: now,
    });
  }
  const ticks = 200;
  const t0 = performance.now();
  for (let i = 0; i < ticks; i++) {
    now += 250;
    monitor.tick();
  }
  const perTick = (performance.now() - t0) / ticks;
  const s0 = performance.now();
  await Promise.all(monitor.liveCallIds().map((id) => monitor.callEnded(id, now)));
  const settleMs = performance.now() - s0;
  rows.push({
    'live calls': n,
    'tick (ms)': perTick.toFixed(3),
    'tick share of a 250 ms period': `${((perTick / 250) * 100).toFixed(2)} %`,
    'settlements/s (SQLite)': Math.round((n / settleMs) * 1000),
  });
  await monitor.close();
}

const a = await insertAccount(db, 'serial');
await post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: 1e9 });
const s0 = performance.now();
for (let i = 0; i < 500; i++) await settleCall(db, { accountId: a.id, callId: `s-${i}`, talkCents: 120, ttsCents: 6 });
const serial = 500 / ((performance.now() - s0) / 1000);

console.table(rows);
console.table([{ 'serial settlements/s (talk + tts rows, SQLite)': Math.round(serial) }]);
await db.destroy();
rmSync(dir, { recursive: true, force: true });
