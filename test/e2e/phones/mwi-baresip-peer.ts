/**
 * Run inside a private network namespace by mwi-baresip.test.ts (baresip will not start on `lo` alone,
 * test/support/netns-peer.ts): the whole switch and baresip as Bob's phone with its mwi module, which
 * registers and SUBSCRIBEs to message-summary (digest with the phone token, answering the switch's challenge). A
 * SIPp phone (Alice) then calls Bob, who is in DND with voicemail, and leaves a message. Prints one JSON line.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { api, createAccountWithDid, speechUlawFile, startTestSwitch } from '../support/harness.js';
import { nextPort } from '../../support/ports.js';
import { exitOf, phoneUser, spawnBaresip, until } from '../support/baresip.js';
import { phoneCallsAndSpeaks } from '../support/voicemail-peers.js';

const ctx = await startTestSwitch();
const acct = await createAccountWithDid(ctx.db, '+254700000461');
const domain = `${acct.id}.sip.simu.test`;
const alice = await phoneUser(ctx, acct, 'alice@example.com');
const bob = await phoneUser(ctx, acct, 'bob@example.com');
await api(ctx.baseUrl, acct.key, 'POST', '/api/users/update', { uuid: bob.uuid, dnd: true, voicemail_enabled: true });

const work = mkdtempSync(path.join(os.tmpdir(), 'simu-mwi-baresip-'));
const phone = spawnBaresip({
  work,
  name: 'bob',
  phone: { ...bob, domain, switchPort: ctx.ports.sip },
  seconds: 40,
  mwi: true,
});

const mwi = ctx.sw.sip!.mwi;
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
phone.child.kill('SIGTERM');
await exitOf(phone, 10_000);
console.log(JSON.stringify({ subscribed, callerExit, messages, stillSubscribed, log: phone.log }));
await ctx.sw.stop();
process.exit(0);
