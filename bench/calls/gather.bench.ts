/**
 * Gather's digits-to-action latency, measured from outside: a SIPp carrier places calls one after the other to a
 * DID whose document is `<Gather numDigits="1" action=...><Say>...</Say></Gather>`. The caller's media goes to a
 * socket this bench owns; once a call's prompt is playing, the bench presses 5 from that socket (SIPp's own RFC
 * 4733 capture, packets 20 ms apart) and times:
 * - digits-to-action: the key's first RTP packet sent -> the action request arriving at the account's server
 *   (our IVR endpoint reads the event, the Gather ends, the signed POST goes out);
 * - barge-in: the key's first packet -> the last prompt packet the caller received.
 * The switch runs in this process with its supervised rtpengine.
 *
 *   npx tsx bench/calls/gather.bench.ts [calls=40]
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import { readPcapUdp } from '../../media/pcap-reader.js';
import { parseRtp } from '../../media/rtp-packet.js';
import {
  AccountServer,
  addCarrier,
  carrierCallsDid,
  createAccountWithDid,
  startTestSwitch,
} from '../../test/e2e/support/harness.js';
import { nextPort } from '../../test/support/ports.js';

const CALLS = Number(process.argv[2] ?? 40);
const DID = '+254711900016';
const KEY = readPcapUdp(readFileSync('/usr/share/sip-tester/dtmf_2833_5.pcap'))
  .map((p) => p.payload)
  .filter((p) => parseRtp(p)?.payloadType === 101);

const ctx = await startTestSwitch({ env: { SIMU_WEBHOOK_ALLOW_PRIVATE: 'true' } });
const server = await new AccountServer().listen();
const acct = await createAccountWithDid(ctx.db, DID, 1_000_000_000);
await addCarrier(ctx.db, nextPort(), 'carrier', ctx.sw);
server.verbs(
  '/in',
  `<Response><Gather numDigits="1" timeout="5" action="${server.url('/got')}">` +
    '<Say>Welcome. For sales press one, for support press two, for anything else stay on the line.</Say>' +
    '</Gather></Response>',
);
server.verbs('/got', '<Response><Hangup/></Response>');
await ctx
  .db('numbers')
  .where({ number: DID })
  .update({ webhook_voice_inbound: server.url('/in') });
void acct;

interface CallTiming {
  ssrc: number;
  keyAt?: number;
  actionAt?: number;
  lastPromptAt: number;
  packets: number;
}
// Calls run one at a time (SIPp -l 1): a prompt packet with a new SSRC after the current call got its action
// is the next call (rtpengine may reuse the same port for it).
const order: CallTiming[] = [];
const sinkPort = nextPort();
const sink = dgram.createSocket('udp4');
sink.on('message', (msg, rinfo) => {
  const rtp = parseRtp(msg);
  if (rtp?.payloadType !== 0) return;
  let c = order[order.length - 1];
  if (!c || (c.actionAt !== undefined && c.ssrc !== rtp.ssrc)) {
    c = { ssrc: rtp.ssrc, lastPromptAt: 0, packets: 0 };
    order.push(c);
  }
  if (c.actionAt !== undefined) return;
  c.packets += 1;
  c.lastPromptAt = performance.now();
  // A quarter second into the prompt, the caller presses 5 (once per call).
  if (c.packets === 12 && c.keyAt === undefined) {
    const timing = c;
    void (async () => {
      timing.keyAt = performance.now();
      for (const packet of KEY) {
        sink.send(packet, rinfo.port, rinfo.address);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
  }
});
await new Promise<void>((r) => sink.bind(sinkPort, '127.0.0.1', () => r()));

const handler = server.routes.get('/got')!;
server.routes.set('/got', (req) => {
  const c = order[order.length - 1];
  if (c) c.actionAt = performance.now();
  return handler(req);
});

const sipp = carrierCallsDid({
  sip: ctx.ports.sip,
  did: DID,
  port: nextPort(),
  sink: sinkPort,
  scenario: 'uac-inbound.xml',
  calls: CALLS,
  extra: ['-l', '1', '-r', '5'],
});
const code = await sipp.exited;

const digitsToAction: number[] = [];
const bargeIn: number[] = [];
for (const c of order) {
  if (c.keyAt === undefined || c.actionAt === undefined) continue;
  digitsToAction.push(c.actionAt - c.keyAt);
  bargeIn.push(Math.max(0, c.lastPromptAt - c.keyAt));
}
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
console.log(`SIPp exit ${code}; calls ${CALLS}, prompts seen ${order.length}, measured ${digitsToAction.length}`);
console.table({
  'digits-to-action ms': {
    n: digitsToAction.length,
    p50: pct(digitsToAction, 50).toFixed(1),
    p99: pct(digitsToAction, 99).toFixed(1),
    max: Math.max(...digitsToAction).toFixed(1),
  },
  'barge-in ms (last prompt packet after the key)': {
    n: bargeIn.length,
    p50: pct(bargeIn, 50).toFixed(1),
    p99: pct(bargeIn, 99).toFixed(1),
    max: Math.max(...bargeIn).toFixed(1),
  },
});
sink.close();
await server.close();
await ctx.sw.stop();
process.exit(0);
