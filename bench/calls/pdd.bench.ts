/**
 * Post-dial delay the switch adds: a carrier's INVITE for a DID in, the Dial leg's INVITE out to the carrier.
 * The path in between is the whole inbound flow: trunk match, DID lookup, admission, CDR write, rtpengine
 * offer/answer, the 200 to the caller, the signed voice_inbound webhook round trip (a local server answering
 * at once), verb parsing, rtpengine offer for the dialled leg, the INVITE out.
 *
 *   npx tsx bench/calls/pdd.bench.ts [calls=200] [concurrency=4]
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import http from 'node:http';
import { UserAgent } from '../../sip/stack/index.js';
import { plainAudioSdp } from '../../media/sdp.js';
import { startTestSwitch, createAccountWithDid, addCarrier } from '../../test/e2e/support/harness.js';

const CALLS = Number(process.argv[2] ?? 200);
const CONCURRENCY = Number(process.argv[3] ?? 4);

const ctx = await startTestSwitch({ http: 21980, sip: 21965, ng: 21228, rtpMin: 23000, rtpMax: 23999 });
const acct = await createAccountWithDid(ctx.db, '+254711900001', 10_000_000);
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/xml' });
    res.end('<Response><Dial timeout="5"><Number>+254722000001</Number></Dial></Response>');
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
const hook = `http://127.0.0.1:${(server.address() as { port: number }).port}/in`;
await ctx.db('numbers').where({ number: acct.did }).update({ webhook_voice_inbound: hook });
await ctx.db('accounts').where({ id: acct.id }).update({ max_concurrent_calls: 1000, max_cps: 1000 });
await addCarrier(ctx.db, 21961, 'carrier', ctx.sw);

// The carrier: sends calls in, and refuses the Dial legs coming out (486) once their INVITE is timed.
const carrier = new UserAgent();
await carrier.listen({ udp: { host: '127.0.0.1', port: 21961 } });
const sentAt = new Map<string, number>();
const pdd: number[] = [];
const waiters = new Map<string, () => void>();
carrier.onRequest('INVITE', (req, srv) => {
  srv.send(486, 'Busy Here');
  // The Dial leg presents the inbound caller's number, which is unique per bench call.
  const id = /sip:\+2547330(\d+)@/.exec(req.headers.get('from') ?? '')?.[1];
  const at = id === undefined ? undefined : sentAt.get(id);
  if (id === undefined || at === undefined) return;
  pdd.push(performance.now() - at);
  sentAt.delete(id);
  waiters.get(id)?.();
  waiters.delete(id);
});
carrier.onRequest('BYE', (_req, srv) => srv.send(200, 'OK'));

const sdp = plainAudioSdp({ address: '127.0.0.1', port: 24000, codecs: ['PCMU'] });
let next = 0;
async function worker() {
  while (next < CALLS) {
    const id = String(next++);
    const done = new Promise<void>((r) => waiters.set(id, r));
    sentAt.set(id, performance.now());
    const dialog = await carrier
      .createUAC(`sip:${acct.did.slice(1)}@127.0.0.1:21965`, { localSdp: sdp, from: `<sip:+2547330${id}@127.0.0.1>` })
      .catch(() => undefined);
    await Promise.race([done, new Promise((r) => setTimeout(r, 5000))]);
    await dialog?.bye().catch(() => undefined);
  }
}
const t0 = performance.now();
await Promise.all(Array.from({ length: CONCURRENCY }, worker));
const secs = (performance.now() - t0) / 1000;
pdd.sort((a, b) => a - b);
const q = (p: number) => pdd[Math.min(pdd.length - 1, Math.floor((p / 100) * pdd.length))]?.toFixed(1);
console.log('| measure | value |');
console.log('|---|---|');
console.log(`| calls measured | ${pdd.length} of ${CALLS} (concurrency ${CONCURRENCY}) |`);
console.log(`| post-dial delay p50 (ms) | ${q(50)} |`);
console.log(`| post-dial delay p99 (ms) | ${q(99)} |`);
console.log(`| post-dial delay max (ms) | ${pdd[pdd.length - 1]?.toFixed(1)} |`);
console.log(`| call attempts per second | ${(pdd.length / secs).toFixed(1)} |`);
await carrier.close();
server.close();
await ctx.sw.stop();
process.exit(0);
