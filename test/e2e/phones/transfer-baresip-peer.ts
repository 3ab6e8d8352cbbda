/**
 * Run inside a private network namespace by transfer-baresip.test.ts (baresip will not start on `lo` alone,
 * test/support/netns-peer.ts): the whole switch on 127.0.0.1, two baresip phones registered as extensions
 * B (the receptionist, who transfers) and C (the target, writing what it hears with sndfile), and a caller A on
 * our own stack (TestPhone, real RTP) that calls B and speaks once C has it. B transfers with baresip's own
 * `/transfer` command (REFER, RFC 3515) over its ctrl_tcp socket. With XFER_MODE=ivr the caller is instead a PSTN
 * caller (SIPp through a carrier trunk, speaking on a loop) whose call the IVR answered and Dialed to B
 * (<Say> then <Dial><Extension>): the phone-to-trunk bridge. Prints one JSON line; children killed by PID.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  AccountServer,
  addCarrier,
  carrierCallsDid,
  createAccountWithDid,
  speakingCarrierScenario,
  speechUlawFile,
  startTestSwitch,
  type SippRun,
} from '../support/harness.js';
import { TestPhone, speechUlaw } from '../support/phone.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import { baresipCommand, heardSeconds, phoneUser, spawnBaresip, until } from '../support/baresip.js';

const work = mkdtempSync(path.join(os.tmpdir(), 'simu-transfer-baresip-'));
const ctx = await startTestSwitch();
const DID = '+254711960001';
const ivr = process.env.XFER_MODE === 'ivr';
const acct = await createAccountWithDid(ctx.db, DID);
const server = await new AccountServer().listen();
const domain = `${acct.id}.sip.simu.test`;
const children: ChildProcess[] = [];

const baresip = (name: string, u: { ext: string; token: string }) =>
  spawnBaresip({
    work,
    name,
    phone: { ...u, domain, switchPort: ctx.ports.sip },
    seconds: 45,
    ctrl: true,
    records: true,
  });
const command = baresipCommand;

const a = await phoneUser(ctx, acct, 'xfer1@example.com');
const bUser = await phoneUser(ctx, acct, 'xfer2@example.com');
const cUser = await phoneUser(ctx, acct, 'xfer3@example.com');
const b = baresip('receptionist', bUser);
const c = baresip('target', cUser);
children.push(b.child, c.child);
const registered = await until(() => /200 OK/.test(b.log) && /200 OK/.test(c.log), 15000);
const caller = await new TestPhone(a.ext, a.token, acct.id, nextPorts(2), nextPorts(2), ctx.ports.sip).start();
const child = () => ctx.db('calls').where({ account_id: acct.id }).whereNotNull('parent_call_id').first();
/** What the carrier does with a re-INVITE (scenarios/uac-inbound-speaks.xml takes none): 200 with its SDP, ACK. */
const REINVITE_ANSWER = `<recv request="INVITE" />
  <send>
    <![CDATA[
      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:]
      [last_Call-ID:]
      [last_CSeq:]
      Contact: <sip:carrier@[local_ip]:[local_port]>
      Content-Type: application/sdp
      Content-Length: [len]

      v=0
      o=carrier 53655765 2353687638 IN IP[local_ip_type] [local_ip]
      s=-
      c=IN IP[media_ip_type] [media_ip]
      t=0 0
      m=audio [media_port] RTP/AVP 0
      a=rtpmap:0 PCMU/8000
    ]]>
  </send>
  <recv request="ACK" />
  `;
const SPEECH = 'This is the caller, now speaking to the person the call was transferred to.';
let callError: string | undefined;
let transferred = false;
let pstn: SippRun | undefined;
try {
  let placed: Promise<unknown>;
  if (ivr) {
    // A PSTN caller through the carrier's trunk; the IVR answers, speaks, then Dials extension B.
    await addCarrier(ctx.db, nextPort(), 'carrier', ctx.sw, ['127.0.0.1']);
    server.verbs(
      '/in',
      `<Response><Say>Connecting you.</Say><Dial timeLimit="60"><Extension>${bUser.ext}</Extension></Dial></Response>`,
    );
    await ctx
      .db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/in') });
    const scenario = speakingCarrierScenario(speechUlawFile(SPEECH));
    // The caller speaks on a loop (its rtp_stream repeats) so it is still talking once the transfer is done.
    // A transfer re-INVITEs the transferee when the media engine gives it new ports: the carrier answers it.
    writeFileSync(
      scenario,
      readFileSync(scenario, 'utf8')
        .replace(/rtp_stream="([^"]*),1,0"/, 'rtp_stream="$1,-1,0"')
        .replace('<recv request="BYE" />', REINVITE_ANSWER + '<recv request="BYE" />'),
    );
    pstn = carrierCallsDid({ sip: ctx.ports.sip, did: DID, port: nextPort(), sink: nextPort(), scenario });
    placed = Promise.resolve();
  } else placed = caller.call(bUser.ext);
  await until(() => /Incoming call/.test(b.log), 15000);
  await command(b.ctrl, 'accept');
  await placed;
  // B transfers once its call is up at both ends, not after a fixed pause: baresip has the ACK, and the switch has
  // bridged B (a phone's call: as its 200 went to the caller, which `placed` waited for; a Dial: at DIAL.0200).
  await until(() => /Call established/.test(b.log), 10000);
  if (ivr) await until(async () => Boolean(await ctx.db('call_events').where({ code: 'DIAL.0200' }).first()), 10000);
  await command(b.ctrl, 'transfer', `sip:${cUser.ext}@${domain}`);
  await until(() => /Incoming call/.test(c.log), 10000);
  await command(c.ctrl, 'accept');
  transferred = await until(async () => (await child())?.status === 'answered', 10000);
  if (ivr) {
    await new Promise((r) => setTimeout(r, 5000)); // the PSTN caller keeps talking
    await command(c.ctrl, 'hangup');
  } else {
    await caller.speak(speechUlaw(SPEECH));
    await new Promise((r) => setTimeout(r, 300));
    await caller.dialog!.bye();
  }
} catch (e) {
  callError = String(e);
}
await until(async () => Boolean((await child())?.ended_at), 5000);
await new Promise((r) => setTimeout(r, 1000)); // baresip writes and closes its dump files
const heard = heardSeconds(c);
const rows = await ctx.db('calls').where({ account_id: acct.id }).orderBy('created_at');
const events = async (id: string) =>
  (await ctx.db('call_events').where({ call_id: id }).orderBy('created_at')).map((e) => e.code as string);
console.log(
  JSON.stringify({
    registered,
    callError,
    transferred,
    heardSeconds: heard,
    exts: { a: a.ext, b: bUser.ext, c: cUser.ext },
    calls: await Promise.all(
      rows.map(async (r) => ({
        id: r.id,
        parent: r.parent_call_id,
        direction: r.direction,
        from: r.from_number,
        to: r.to_number,
        status: r.status,
        reason: r.reason_code,
        events: await events(r.id),
      })),
    ),
    pstn: pstn?.output().slice(-7000, -1500),
    bLog: b.log.slice(-2500),
    cLog: c.log.slice(-1500),
  }),
);
for (const ch of children) if (ch.pid) process.kill(ch.pid, 'SIGKILL');
pstn?.kill();
await caller.close();
await server.close();
await ctx.sw.stop();
process.exit(0);
