/**
 * Events room benchmark: status-callback latency through the durable outbox to a local receiver, and the time to
 * fan one event out to 1,000 stream sockets. Run (needs ~2,100 file descriptors):
 *
 *   bash -c 'ulimit -n 8192; npx tsx bench/events/events.bench.ts [--sockets 1000] [--events 200]'
 *
 * Everything (receiver, clients, SQLite) shares this process and the box's 2 cores, so figures are upper bounds.
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { WebSocket } from 'ws';
import { openDb, migrate, mintStreamToken, consumeStreamToken, type Db } from '../../store/index.js';
import { EventBus, EventCodes, EventPublisher, StatusCallbackOutbox, attachStream } from '../../events/index.js';
import { UrlPolicy } from '../../kit/index.js';

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const SOCKETS = arg('sockets', 1000);
const EVENTS = arg('events', 200);
const quiet = pino({ level: 'silent' });

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const ms = (x: number) => x.toFixed(2);

async function seed(db: Db, statusUrl: string): Promise<{ accountId: string; callIds: string[] }> {
  const accountId = randomUUID();
  await db('accounts').insert({
    id: accountId,
    name: 'bench',
    signing_secret: 'whsec_bench',
    webhook_status: statusUrl,
    created_at: new Date().toISOString(),
  });
  const callIds: string[] = [];
  for (let i = 0; i < 20; i++) {
    const id = randomUUID();
    await db('calls').insert({
      id,
      sid: `call_${id.replace(/-/g, '').slice(0, 24)}`,
      account_id: accountId,
      direction: 'outbound',
      from_number: '+254700000001',
      to_number: '+254700000002',
      status: 'answered',
      created_at: new Date().toISOString(),
    });
    callIds.push(id);
  }
  return { accountId, callIds };
}

async function deliveryLatency(db: Db): Promise<string[][]> {
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  let waiter: (() => void) | undefined;
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = JSON.parse(Buffer.concat(chunks).toString('utf8')).id as string;
      const t0 = sentAt.get(id);
      if (t0 !== undefined) latencies.push(performance.now() - t0);
      res.end();
      waiter?.();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/status`;
  const { accountId, callIds } = await seed(db, url);
  const bus = new EventBus(quiet);
  const publisher = new EventPublisher({ db, bus, logger: quiet });
  // The receiver is on loopback: the operator's opt-in to private destinations.
  const urlPolicy = new UrlPolicy({ allowPrivate: true });
  const outbox = new StatusCallbackOutbox({ db, publisher, logger: quiet, urlPolicy }).start();

  // One at a time: emit, wait for the receiver. Latency with no queue.
  for (let i = 0; i < EVENTS; i++) {
    const done = new Promise<void>((r) => (waiter = r));
    const t0 = performance.now();
    const e = await publisher.emit({ accountId, code: EventCodes.ttsGenerated, callId: callIds[i % callIds.length] });
    sentAt.set(e.id, t0);
    await done;
  }
  const single = latencies.splice(0);

  // A burst: all emitted back to back over 20 calls, delivered in order per call.
  const all = new Promise<void>((r) => (waiter = () => latencies.length === EVENTS && r()));
  const tb = performance.now();
  for (let i = 0; i < EVENTS; i++) {
    const t0 = performance.now();
    const e = await publisher.emit({ accountId, code: EventCodes.ttsGenerated, callId: callIds[i % callIds.length] });
    sentAt.set(e.id, t0);
  }
  await all;
  const burstSeconds = (performance.now() - tb) / 1000;
  await outbox.close();
  receiver.closeAllConnections();
  await new Promise<void>((r) => receiver.close(() => r()));
  return [
    ['status callback, one at a time', String(single.length), ms(pct(single, 50)), ms(pct(single, 99)), '-'],
    [
      'status callback, burst (20 calls)',
      String(latencies.length),
      ms(pct(latencies, 50)),
      ms(pct(latencies, 99)),
      (EVENTS / burstSeconds).toFixed(0),
    ],
  ];
}

async function fanOut(db: Db): Promise<string[][]> {
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const bus = new EventBus(quiet);
  const stream = attachStream(server, { bus, consumeToken: (t) => consumeStreamToken(db, t), logger: quiet });
  const accountId = randomUUID();
  await db('accounts').insert({
    id: accountId,
    name: 'fan',
    signing_secret: 's',
    created_at: new Date().toISOString(),
  });

  let received = 0;
  let allIn: (() => void) | undefined;
  const sockets: WebSocket[] = [];
  for (let i = 0; i < SOCKETS; i += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, SOCKETS - i) }, async () => {
        const token = await mintStreamToken(db, accountId, 60);
        const ws = new WebSocket(`ws://127.0.0.1:${port}/api/stream?token=${token}`);
        ws.on('message', () => {
          if (++received === SOCKETS) allIn?.();
        });
        await new Promise<void>((r, j) => {
          ws.once('open', () => r());
          ws.once('error', j);
        });
        return ws;
      }),
    );
    sockets.push(...batch);
  }

  const publishMs: number[] = [];
  const lastMs: number[] = [];
  for (let round = 0; round < 20; round++) {
    received = 0;
    const done = new Promise<void>((r) => (allIn = r));
    const t0 = performance.now();
    bus.publish({
      id: String(round),
      accountId,
      staffOnly: false,
      frame: {
        code: EventCodes.callAnswered,
        event: 'call.answered',
        sid: 'call_0123456789abcdef01234567',
        createdAt: new Date().toISOString(),
        data: { round },
      },
    });
    publishMs.push(performance.now() - t0);
    await done;
    lastMs.push(performance.now() - t0);
  }
  for (const ws of sockets) ws.terminate();
  await stream.close();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  return [
    [`fan-out: publish() returns, ${SOCKETS} sockets`, '20', ms(pct(publishMs, 50)), ms(pct(publishMs, 99)), '-'],
    [`fan-out: last of ${SOCKETS} sockets has it`, '20', ms(pct(lastMs, 50)), ms(pct(lastMs, 99)), '-'],
  ];
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-bench-events-'));
  const db = openDb({ databaseUrl: '', dataDir: dir, sqliteFile: 'bench.db' });
  await migrate(db);
  try {
    const rows = [...(await deliveryLatency(db)), ...(await fanOut(db))];
    const head = ['measure (SQLite, loopback)', 'n', 'p50 ms', 'p99 ms', 'events/s'];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
    console.log(line(head));
    console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
    for (const r of rows) console.log(line(r));
  } finally {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
