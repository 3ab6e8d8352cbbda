/**
 * Run inside a private network namespace by gather-baresip.test.ts (baresip will not start on `lo` alone,
 * test/support/netns-peer.ts): the whole switch on 127.0.0.1, a DID whose document is a Gather, and
 * baresip as the carrier's caller. Once the Gather listens, baresip is told over its ctrl_tcp socket to press 4,
 * 2 and # (baresip sends RFC 4733 events); prints what the action got as one JSON line. Children killed by PID.
 */
import { execFileSync, spawn } from 'node:child_process';
import net from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AccountServer, addCarrier, createAccountWithDid, startTestSwitch } from '../support/harness.js';
import { nextPort, nextPorts } from '../../support/ports.js';

const DID = '+254711800001';
const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-baresip-gather-'));
const ctx = await startTestSwitch();
const server = await new AccountServer().listen();
const acct = await createAccountWithDid(ctx.db, DID);
await ctx
  .db('accounts')
  .where({ id: acct.id })
  .update({ webhook_status: server.url('/status') });
await addCarrier(ctx.db, nextPort(), 'carrier', ctx.sw, ['127.0.0.1', '10.77.0.1', '10.77.0.2']);
server.verbs(
  '/in',
  `<Response><Gather action="${server.url('/got')}" timeout="5">` +
    '<Say>Please enter your branch code, followed by the pound key.</Say></Gather></Response>',
);
server.verbs('/got', '<Response><Hangup/></Response>');
await ctx
  .db('numbers')
  .where({ number: DID })
  .update({ webhook_voice_inbound: server.url('/in') });

// What the phone "says": 15 s of quiet noise, so its RTP (which carries the key events) flows the whole call.
const source = path.join(dir, 'source.wav');
execFileSync('sox', [
  '-R',
  '-n',
  '-r',
  '8000',
  '-c',
  '1',
  '-b',
  '16',
  source,
  'synth',
  '15',
  'whitenoise',
  'gain',
  '-50',
]);
// baresip takes sip_listen's port and the next one (TLS): the control socket sits two ports further.
const sipPort = nextPorts(4);
const ctrlPort = sipPort + 3;
writeFileSync(
  path.join(dir, 'config'),
  [
    `sip_listen 127.0.0.1:${sipPort}`,
    `audio_source aufile,${source}`,
    'audio_player aubridge,nil',
    'audio_alert aubridge,nil',
    'module_path /usr/lib/baresip/modules',
    'module stdio.so',
    'module g711.so',
    'module aufile.so',
    'module aubridge.so',
    'module_app account.so',
    'module_app menu.so',
    'module_app ctrl_tcp.so',
    `ctrl_tcp_listen 127.0.0.1:${ctrlPort}`,
  ].join('\n') + '\n',
);
writeFileSync(path.join(dir, 'accounts'), `<sip:carrier@127.0.0.1:${sipPort}>;regint=0\n`);
const phone = spawn(
  'baresip',
  ['-4', '-n', 'v0', '-f', dir, '-e', `/dial sip:${DID.slice(1)}@127.0.0.1:${ctx.ports.sip}`, '-t', '20'],
  { stdio: ['ignore', 'pipe', 'pipe'] },
);
let log = '';
phone.stdout.on('data', (d) => (log += String(d)));
phone.stderr.on('data', (d) => (log += String(d)));

const until = async (pred: () => boolean, ms: number) => {
  const end = Date.now() + ms;
  while (!pred() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  return pred();
};
const listening = await until(() => server.statusEvents().includes('GATHER.0100'), 15000);
await new Promise((r) => setTimeout(r, 800)); // the prompt is playing
/** One ctrl_tcp command (a netstring holding JSON). */
const command = (cmd: string, params: string) =>
  new Promise<void>((resolve) => {
    const json = JSON.stringify({ command: cmd, params, token: cmd });
    const sock = net.connect(ctrlPort, '127.0.0.1', () => sock.write(`${Buffer.byteLength(json)}:${json},`));
    const done = (): void => {
      sock.destroy();
      resolve();
    };
    sock.on('data', (d) => ((log += `\nctrl: ${String(d)}`), done()));
    sock.on('error', done);
    setTimeout(done, 1000);
  });
for (const key of ['4', '2', '#']) {
  await command('sndcode', key);
  await new Promise((r) => setTimeout(r, 400));
}
await until(() => server.requests.some((r) => r.url === '/got'), 8000);
if (phone.pid) process.kill(phone.pid, 'SIGKILL');
const action = server.requests.find((r) => r.url === '/got')?.json;
console.log(JSON.stringify({ listening, digits: action?.Digits ?? null, log: log.slice(-3000) }));
await server.close();
await ctx.sw.stop();
process.exit(0);
