/**
 * The switch's CPU per outbound webhook exchange: a call's signed call-control request (verbs/fetch.ts, its reply
 * read whole and parsed) and a status callback as the outbox sends it (events/status-post.ts: signed, under its
 * deadline, its reply dropped), each against a keep-alive HTTP server in its own process on loopback, to an address
 * and to a host name (`localhost`, resolved and checked like a customer's); beside them the bare guarded request, the
 * same POST through the fetch-shaped guarded fetch (a web Response and its stream) and through bare `http.request`,
 * the floor. Rounds alternate, so a slow spell of the box hits all.
 *
 *   npx tsx bench/events/webhook-exchange.bench.ts [--requests 4000] [--concurrency 8] [--rounds 4] [--only TEXT]
 *
 * CPU is this process's (user + system) over the round, divided by its requests: the client's side only. `--only`
 * runs the exchanges whose name contains TEXT (for a profile: `node --cpu-prof --import tsx ...`).
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import { spawn } from 'node:child_process';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { UrlPolicy, createGuardedFetch, guardedRequest } from '../../kit/index.js';
import { EventCodes, eventFor, postStatusCallback } from '../../events/index.js';
import { buildCallControlFields, fetchVerbDocument } from '../../verbs/index.js';

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const REQUESTS = arg('requests', 4000);
const CONCURRENCY = arg('concurrency', 8);
const ROUNDS = arg('rounds', 4);
const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1]! : '';

const DOCUMENT = '<Response><Dial><Number>+254700000001</Number></Dial></Response>';
const server = spawn(
  process.execPath,
  [
    '-e',
    `require('http').createServer((q, s) => { q.resume(); q.on('end', () => { s.writeHead(200, { 'content-type': 'application/xml' }); s.end(${JSON.stringify(DOCUMENT)}); }); }).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
process.on('exit', () => server.kill());
const port = await new Promise<number>((resolve) => server.stdout!.once('data', (d) => resolve(Number(String(d)))));
const url = `http://127.0.0.1:${port}/voice`;
const named = `http://localhost:${port}/status`;
const policy = new UrlPolicy({ allowPrivate: true });
const fields = buildCallControlFields({
  sid: 'call_6543a1b2c3d4e5f6a7b8c9d0',
  accountUuid: '018f3a2e-7b1c-7d4e-8f00-000000000001',
  direction: 'inbound',
  from: '+254733000009',
  to: '+254711000001',
  customPayload: null,
});
const body = JSON.stringify(fields);
/** A status callback's body as the outbox stores it (about a kilobyte: the envelope and the call snapshot). */
const statusBody = JSON.stringify({
  accountId: '018f3a2e-7b1c-7d4e-8f00-000000000001',
  code: EventCodes.callAnswered,
  createdAt: '2026-11-29T03:00:00.000Z',
  customPayload: { order: 'A-1001', region: 'nairobi' },
  data: {
    answered_at: '2026-11-29T03:00:00.000Z',
    direction: 'inbound',
    duration_seconds: null,
    ended_at: null,
    from_number: '+254733000009',
    reason_code: null,
    sid: 'call_6543a1b2c3d4e5f6a7b8c9d0',
    started_at: '2026-11-29T02:59:58.000Z',
    status: 'answered',
    talk_seconds: null,
    to_number: '+254711000001',
  },
  event: eventFor(EventCodes.callAnswered).event,
  id: 'evt_018f3a2e7b1c7d4e8f00000000000001',
  sid: 'call_6543a1b2c3d4e5f6a7b8c9d0',
});
const statusPost = (to: string) => () =>
  postStatusCallback(
    { url: to, body: statusBody, event: eventFor(EventCodes.callAnswered).event, secret: 'whsec_bench' },
    { policy, timeoutMs: 10_000, now: Date.now() },
  ).then((outcome) => {
    if (!outcome.ok) throw new Error(`status callback failed: ${outcome.error}`);
  });
const headers = { 'content-type': 'application/json', 'x-voice-signature': 'v1=bench', 'x-voice-timestamp': '1' };
const fetchShaped = createGuardedFetch({ policy });
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

const ways: Record<string, () => Promise<unknown>> = {
  'call-control request (fetchVerbDocument)': () =>
    fetchVerbDocument({ url, fields, secret: 'bench', urlPolicy: policy, signal: new AbortController().signal }),
  'status callback as sent (postStatusCallback)': statusPost(url),
  'status callback to a host name (localhost)': statusPost(named),
  'guardedRequest alone, body dropped': () =>
    guardedRequest(
      url,
      { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000), maxBytes: 65_536, dropBody: true },
      policy,
    ),
  'guarded fetch, Response body read': async () => {
    const r = await fetchShaped(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
    await r.text();
  },
  'bare http.request (floor)': () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path: '/voice', method: 'POST', agent, headers });
      req.on('error', reject);
      req.on('response', (res) => res.resume().on('end', resolve));
      req.end(body);
    }),
};

async function round(run: () => Promise<unknown>): Promise<{ us: number; perSecond: number }> {
  let started = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (started++ < REQUESTS) await run();
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return { us: (cpu.user + cpu.system) / REQUESTS, perSecond: (REQUESTS / (performance.now() - t0)) * 1000 };
}

const results = new Map<string, number[]>();
const chosen = Object.entries(ways).filter(([name]) => name.includes(ONLY));
for (const [, run] of chosen) await round(run); // warm-up: JIT, connections
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, run] of chosen) {
    const { us } = await round(run);
    results.set(name, [...(results.get(name) ?? []), us]);
  }
}
console.log(
  `\nwebhook exchanges: ${REQUESTS} requests x ${ROUNDS} rounds, ${CONCURRENCY} at a time, keep-alive, loopback\n`,
);
console.log('| exchange | client CPU µs/request, median of rounds | rounds |');
console.log('|---|---|---|');
for (const [name, xs] of results) {
  const sorted = [...xs].sort((a, b) => a - b);
  console.log(
    `| ${name} | ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} | ${xs.map((x) => x.toFixed(0)).join(', ')} |`,
  );
}
process.exit(0);
