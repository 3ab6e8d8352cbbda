/**
 * Run inside a private network namespace by mwi-baresip.test.ts (baresip will not start on `lo` alone,
 * /work/shared/TESTING-WITH-PEERS.md): the whole switch and baresip as Bob's phone with its mwi module, which
 * registers and SUBSCRIBEs to message-summary (digest with the phone token, answering the switch's challenge). A
 * SIPp phone (Alice) then calls Bob, who is in DND with voicemail, and leaves a message. Prints one JSON line.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { api, createAccountWithDid, speechUlawFile, startTestSwitch } from './harness.js';
import { nextPort, nextPorts } from '../support/ports.js';
import { phoneCallsAndSpeaks } from './voicemail-peers.js';

const ctx = await startTestSwitch();
const acct = await createAccountWithDid(ctx.db, '+254700000461');
const domain = `${acct.id}.sip.simu.test`;
async function endUser(email: string) {
  const u = await api(ctx.baseUrl, acct.key, 'POST', '/api/users/create', { email });
  const t = await api(ctx.baseUrl, acct.key, 'POST', '/api/phone-tokens/mint', { uuid: u.body.uuid, ttl_seconds: 600 });
  return { uuid: u.body.uuid as string, ext: u.body.extension_number as string, token: t.body.token as string };
}
const alice = await endUser('alice@example.com');
const bob = await endUser('bob@example.com');
await api(ctx.baseUrl, acct.key, 'POST', '/api/users/update', { uuid: bob.uuid, dnd: true, voicemail_enabled: true });

const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-mwi-baresip-'));
const sipPort = nextPorts(2);
writeFileSync(
  path.join(dir, 'config'),
  [
    `sip_listen 127.0.0.1:${sipPort}`,
    'module_path /usr/lib/baresip/modules',
    'module g711.so',
    'module aubridge.so',
    'module_app account.so',
    'module_app menu.so',
    'module_app mwi.so',
    'audio_player aubridge,nil',
    'audio_source aubridge,nil',
    'audio_alert aubridge,nil',
  ].join('\n') + '\n',
);
writeFileSync(
  path.join(dir, 'accounts'),
  `<sip:${bob.ext}@${domain};transport=udp>;auth_user=${bob.ext};auth_pass=${bob.token};` +
    `outbound="sip:127.0.0.1:${ctx.ports.sip}";regint=600;mwi=yes\n`,
);
const phone = spawn('baresip', ['-4', '-n', 'v0', '-f', dir, '-t', '40'], { stdio: ['ignore', 'pipe', 'pipe'] });
let log = '';
phone.stdout.on('data', (d) => (log += String(d)));
phone.stderr.on('data', (d) => (log += String(d)));
const killer = setTimeout(() => phone.pid && process.kill(phone.pid, 'SIGKILL'), 50_000);

const mwi = ctx.sw.sip!.mwi;
const until = async (ok: () => boolean, ms: number) => {
  for (const end = Date.now() + ms; !ok() && Date.now() < end;) await new Promise((r) => setTimeout(r, 100));
  return ok();
};
const subscribed = await until(() => mwi.size === 1, 15_000);
let callerExit: number | null = null;
let messages = 0;
let stillSubscribed = false;
if (subscribed) {
  const ulaw = speechUlawFile('Hello Bob, this is Alice, please call me back.');
  const caller = phoneCallsAndSpeaks(
    { ext: alice.ext, token: alice.token, domain, switchPort: ctx.ports.sip, port: nextPort() },
    bob.ext,
    ulaw,
    { waitMs: 12_000, loops: 4 },
  );
  callerExit = await caller.exited;
  await until(() => false, 2000); // the NOTIFY and baresip's answer
  messages = (await ctx.db('recordings').where({ end_user_id: bob.uuid })).length;
  // A NOTIFY the phone did not answer 2xx would have ended the subscription (sip/message-waiting.ts).
  stillSubscribed = mwi.size === 1;
}
phone.kill('SIGTERM');
await new Promise((r) => phone.on('exit', r));
clearTimeout(killer);
console.log(JSON.stringify({ subscribed, callerExit, messages, stillSubscribed, log }));
await ctx.sw.stop();
process.exit(0);
