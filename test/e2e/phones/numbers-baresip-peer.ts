/**
 * Run inside a private network namespace by numbers-baresip.test.ts (baresip will not start on `lo` alone,
 * test/support/netns-peer.ts): the whole switch, two SIPp trunks (a carrier on the catch-all route and a
 * PSAP on the `emergency` route), the account's webhook server and baresip as the phone. Prints one JSON line.
 */
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { insertRoute } from '../../../store/index.js';
import { AccountServer, addCarrier, carrier, createAccountWithDid, startTestSwitch } from '../support/harness.js';
import { nextPort } from '../../support/ports.js';
import { waitForBound } from '../../support/wait.js';
import { baresipDials, lastEndedCall, phoneUser } from '../support/baresip.js';

const DID = '+254700000451';
const ctx = await startTestSwitch();
const server = new AccountServer();
await server.listen();
const acct = await createAccountWithDid(ctx.db, DID);
const CARRIER = nextPort();
const PSAP = nextPort();
const SINK = nextPort(); // where the SIPp trunks send their RTP (nobody listens: not about audio)
// Phones and trunks share 127.0.0.1 here: the trunks take only outbound legs (their INVITEs would come from .2).
const carrierTrunk = await addCarrier(ctx.db, CARRIER, 'a-carrier', ctx.sw, ['127.0.0.2']);
const psapTrunk = await addCarrier(ctx.db, PSAP, 'b-psap', ctx.sw, ['127.0.0.3']);
await insertRoute(ctx.db, { prefix: '', trunk_id: carrierTrunk.id, priority: 0, weight: 1, buy_rate_cents: 0 });
await insertRoute(ctx.db, { prefix: 'emergency', trunk_id: psapTrunk.id, priority: 0, weight: 1, buy_rate_cents: 0 });
server.verbs('/out', '<Response><Dial timeout="10" timeLimit="2"><Number>0712 345 678</Number></Dial></Response>');
await ctx
  .db('accounts')
  .where({ id: acct.id })
  .update({ webhook_voice_outbound: server.url('/out') });
const user = await phoneUser(ctx, acct, 'phone@example.com');
const domain = `${acct.id}.sip.simu.test`;
const work = mkdtempSync(path.join(os.tmpdir(), 'simu-numbers-baresip-'));

/** One baresip run that dials `target` and quits after `seconds`; returns what it logged. */
async function dial(target: string, seconds: number): Promise<string> {
  const phone = { ...user, domain, switchPort: ctx.ports.sip };
  return (await baresipDials({ work, name: 'phone', phone, dial: target, seconds })).log;
}
const lastCall = () => lastEndedCall(ctx.db, acct.id);

/** Request-URI and From of the INVITEs a SIPp logged with -trace_msg. */
function invites(file: string): Array<{ ruri: string; from: string }> {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^INVITE (\S+) SIP\/2\.0[\s\S]*?^From:\s*([^\r\n]*)/gm)].map((m) => ({
    ruri: m[1],
    from: m[2],
  }));
}

const report: Record<string, unknown> = {};
// 1. With money: the national form reaches the webhook and the carrier in E.164.
const carrierLog = path.join(work, 'carrier.log');
const uas = carrier({ port: CARRIER, sink: SINK, extra: ['-trace_msg', '-message_file', carrierLog] });
await waitForBound(CARRIER);
report.national = {
  log: (await dial('0712345678', 8)).slice(-1500),
  webhookTo: server.requests.find((r) => r.url === '/out')?.json?.To,
  carrierInvites: invites(carrierLog),
  cdr: await lastCall(),
  sipp: uas.output().slice(-1500),
};
uas.kill();

// 2. Zero balance: the same number is refused (402) and never reaches a carrier; 112 reaches the emergency route.
await ctx.db('accounts').where({ id: acct.id }).update({ balance_cents: 0 });
const carrierLog2 = path.join(work, 'carrier2.log');
const uas2 = carrier({ port: CARRIER, sink: SINK, extra: ['-trace_msg', '-message_file', carrierLog2] });
await waitForBound(CARRIER);
const refusedLog = await dial('0712345678', 4);
report.refused = { log: refusedLog.slice(-800), cdr: await lastCall(), carrierInvites: invites(carrierLog2) };
uas2.kill();
const psapLog = path.join(work, 'psap.log');
const psap = carrier({
  port: PSAP,
  sink: SINK,
  scenario: 'uas-answer-hangup.xml',
  extra: ['-d', '2000', '-trace_msg', '-message_file', psapLog],
});
await waitForBound(PSAP);
const emergencyLog = await dial('112', 8);
const psapExit = await Promise.race([psap.exited, new Promise((r) => setTimeout(() => r('running'), 3000))]);
const emergencyCdr = await lastCall();
report.emergency = {
  log: emergencyLog.slice(-1500),
  psapExit,
  psapInvites: invites(psapLog),
  sipp: psap.output().slice(-1500),
  cdr: emergencyCdr,
  events: emergencyCdr
    ? (await ctx.db('call_events').where({ call_id: emergencyCdr.id }).orderBy('created_at')).map((e) => e.code)
    : [],
  wallet: (await ctx.db('wallet_transactions').where({ call_id: emergencyCdr?.id ?? '' })).length,
};
psap.kill();
console.log(JSON.stringify(report));
await server.close();
await ctx.sw.stop();
process.exit(0);
