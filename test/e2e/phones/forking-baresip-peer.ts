/**
 * Run inside a private network namespace by forking-baresip.test.ts (baresip will not start on `lo` alone,
 * test/support/netns-peer.ts): the whole switch on 127.0.0.1 and two baresip phones registered as ONE
 * extension, one that answers by itself (writing what it hears with sndfile) and one that only rings. A third
 * end-user (our stack's TestPhone) calls the extension and speaks; tcpdump on lo records the SIP that reaches the
 * ringing phone. Prints one JSON line; children killed by PID.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AccountServer, createAccountWithDid, startTestSwitch } from '../support/harness.js';
import { TestPhone, speechUlaw } from '../support/phone.js';
import { nextPorts } from '../../support/ports.js';
import { baresipCommand, heardSeconds as heardOf, phoneUser, spawnBaresip, until } from '../support/baresip.js';

const work = mkdtempSync(path.join(os.tmpdir(), 'simu-forking-baresip-'));
const ctx = await startTestSwitch();
const server = await new AccountServer().listen();
const acct = await createAccountWithDid(ctx.db, '+254711950001');
const domain = `${acct.id}.sip.simu.test`;
const children: ChildProcess[] = [];

/** A baresip registered as the callee; it rings until told to answer over its ctrl_tcp socket (baresip.ts). */
function baresip(name: string, u: { ext: string; token: string }) {
  const phone = { ...u, domain, switchPort: ctx.ports.sip };
  const p = spawnBaresip({ work, name, phone, seconds: 40, ctrl: true, records: true });
  children.push(p.child);
  return p;
}

const command = (port: number, cmd: string) => baresipCommand(port, cmd);

const callee = await phoneUser(ctx, acct, 'fork1@example.com');
const caller = await phoneUser(ctx, acct, 'fork2@example.com');
const answering = baresip('answering', callee);
const ringing = baresip('ringing', callee);
// What reaches the ringing phone's port, as text (-A), line-buffered.
const dump = spawn('tcpdump', ['-i', 'lo', '-l', '-n', '-A', '-s', '0', 'udp', 'port', String(ringing.sipPort)], {
  stdio: ['ignore', 'pipe', 'pipe'],
});
children.push(dump);
let capture = '';
dump.stdout!.on('data', (d) => (capture += String(d)));
const registered = await until(() => /200 OK/.test(answering.log) && /200 OK/.test(ringing.log), 15000);
await new Promise((r) => setTimeout(r, 500)); // tcpdump is listening

const phone = await new TestPhone(caller.ext, caller.token, acct.id, nextPorts(2), nextPorts(2), ctx.ports.sip).start();
let callError: string | undefined;
try {
  await phone.register();
  const placed = phone.call(callee.ext);
  // Both phones ring; then one person picks up (baresip 1.0.0's answermode=auto did not answer here).
  await until(() => /Incoming call/.test(answering.log) && /Incoming call/.test(ringing.log), 10000);
  await new Promise((r) => setTimeout(r, 500));
  await command(answering.sipPort + 3, 'accept');
  await placed;
  await phone.speak(speechUlaw('This is the caller speaking to whichever phone answered first.'));
  await new Promise((r) => setTimeout(r, 300));
  await phone.dialog!.bye();
} catch (e) {
  callError = String(e);
}
await until(() => /CANCEL sip:/.test(capture), 5000);
await new Promise((r) => setTimeout(r, 1000)); // baresip writes and closes its dump files
const heardSeconds = heardOf(answering);
const ringingDecoded = readdirSync(ringing.dir).filter((f) => f.endsWith('-dec.wav'));
const cancel = /CANCEL sip:[\s\S]*?(?=\n\d\d:\d\d:\d\d|$)/.exec(capture)?.[0] ?? '';
const call = await ctx.db('calls').where({ account_id: acct.id }).orderBy('created_at', 'desc').first();
console.log(
  JSON.stringify({
    registered,
    callError,
    heardSeconds,
    answeringLog: answering.log.slice(-2500),
    ringingLog: ringing.log.slice(-2500),
    ringingInvited: /INVITE sip:/.test(capture),
    cancel,
    ringingAnswered: ringingDecoded.length > 0,
    cdr: call && { direction: call.direction, status: call.status, reason_code: call.reason_code },
  }),
);
for (const c of children) if (c.pid) process.kill(c.pid, 'SIGKILL');
await phone.close();
await server.close();
await ctx.sw.stop();
process.exit(0);
