/**
 * Run inside a private network namespace by queues-baresip.test.ts (baresip will not start on `lo` alone,
 * test/support/netns-peer.ts): the whole switch, three SIPp callers on a DID whose document is <Enqueue>,
 * and baresip as the agent: an end-user phone whose outbound call runs <Dial><Queue>. baresip says 1000 Hz (aufile)
 * and writes what it heard (sndfile); each caller says its own tone. Prints one JSON line.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeWav } from '../../../media/wav.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import { toneAmplitude, toneSeconds } from '../../support/tones.js';
import { eventually } from '../../support/wait.js';
import {
  AccountServer,
  SCENARIOS,
  addCarrier,
  api,
  runSipp,
  createAccountWithDid,
  startTestSwitch,
} from '../support/harness.js';
import { toneUlawFile } from '../support/rtp-capture.js';
import { baresipDials, phoneUser } from '../support/baresip.js';

const DID = '+254711950001';
const ctx = await startTestSwitch();
const server = new AccountServer();
await server.listen();
const acct = await createAccountWithDid(ctx.db, DID);
// The callers' carrier sends from 127.0.0.2: the phone's INVITEs come from 127.0.0.1 and must not look like a trunk's.
await addCarrier(ctx.db, nextPort(), 'carrier', ctx.sw, ['127.0.0.2']);
server.verbs('/enqueue', `<Response><Enqueue action="${server.url('/left')}">support</Enqueue></Response>`);
server.verbs('/left', '<Response><Hangup/></Response>');
server.verbs('/agent', '<Response><Dial timeout="20"><Queue>support</Queue></Dial><Hangup/></Response>');
await ctx
  .db('numbers')
  .where({ number: DID })
  .update({ webhook_voice_inbound: server.url('/enqueue') });
await ctx
  .db('accounts')
  .where({ id: acct.id })
  .update({ webhook_voice_outbound: server.url('/agent') });
const agent = await phoneUser(ctx, acct, 'agent@example.com');
const work = mkdtempSync(path.join(os.tmpdir(), 'simu-queue-baresip-'));

function scenario(ulaw: string): string {
  const file = `${ulaw}.xml`;
  const text = readFileSync(path.join(SCENARIOS, 'uac-inbound-speaks.xml'), 'utf8');
  writeFileSync(file, text.replaceAll('[speech]', ulaw));
  return file;
}
const size = async () =>
  (await api(ctx.baseUrl, acct.key, 'GET', '/api/queues')).body.queues.find((q: any) => q.name === 'support')?.size ??
  0;

const callers = [];
for (const [i, hz] of [440, 660, 880].entries()) {
  const media = nextPorts(4);
  callers.push(
    runSipp([
      `127.0.0.1:${ctx.ports.sip}`,
      ...['-sf', scenario(toneUlawFile(hz, 40)), '-s', DID.slice(1)],
      ...['-i', '127.0.0.2', '-p', String(nextPort()), '-mp', String(media), '-m', '1'],
    ]),
  );
  await eventually(async () => (await size()) === i + 1, `caller ${i + 1} queued`, 15000);
  await new Promise((r) => setTimeout(r, 1000));
}

// The agent: baresip registers as the end-user and calls out; its outbound document takes the queue's front caller.
const source = path.join(work, 'say-1000.wav');
execFileSync('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', source, 'synth', '6', 'sine', '1000', 'vol', '0.3']);
const { log, dir } = await baresipDials({
  work,
  name: 'agent',
  phone: { ...agent, domain: `${acct.id}.sip.simu.test`, switchPort: ctx.ports.sip },
  dial: '+254712345678',
  seconds: 12,
  says: source,
  records: true,
});

// What the agent heard: the middle of its decoded audio, by tone.
const dec = readdirSync(dir).find((f) => f.endsWith('-dec.wav'));
let heard: Record<string, number> = {};
/** Seconds of the middle stretch each tone is heard in (50 ms blocks: packets' phase jumps cannot cancel it). */
let heardSeconds: Record<string, number> = {};
if (dec) {
  const wav = decodeWav(readFileSync(path.join(dir, dec)));
  const rate = wav.sampleRate;
  const mid = wav.samples.subarray(Math.floor(rate * 1.5), Math.floor(rate * 4.5));
  heard = Object.fromEntries([440, 660, 880].map((hz) => [hz, Math.round(toneAmplitude(mid, hz, rate))]));
  heardSeconds = Object.fromEntries([440, 660, 880].map((hz) => [hz, toneSeconds(mid, hz, 1000, rate)]));
}
await eventually(() => server.requests.find((r) => r.url === '/left'), "the bridged caller's action", 10000).catch(
  () => undefined,
);
const enqueued = server.requests.filter((r) => r.url === '/enqueue');
const left = server.requests.find((r) => r.url === '/left')?.json;
const agentAt = server.requests.find((r) => r.url === '/agent')?.at;
console.log(
  JSON.stringify({
    log: log.slice(-1500),
    dec: dec ?? null,
    heard,
    heardSeconds,
    firstCaller: enqueued[0]?.json?.CallSid,
    left: left ? { CallSid: left.CallSid, QueueResult: left.QueueResult, QueueTime: left.QueueTime } : null,
    expectedQueueTime: agentAt === undefined ? null : (agentAt - enqueued[0]!.at) / 1000,
  }),
);
for (const c of callers) c.kill();
await server.close();
await ctx.sw.stop();
process.exit(0);
