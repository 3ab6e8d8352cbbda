import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runSipp, type SippRun } from '../../support/sipp.js';

/**
 * SIPp as an end-user's phone (issue 19, voicemail e2e): it authenticates with its phone token as a Bearer
 * credential (RFC 8898), so no digest round trip is needed. Scenarios are written per test into a temporary
 * folder: SIPp does not expand keywords inside exec actions (rtp_stream, play_pcap_audio), so file paths are
 * written into the XML.
 */
export interface SippPhone {
  ext: string;
  token: string;
  /** The account's SIP domain as the phone writes it (`<account-uuid>.sip.test`). */
  domain: string;
  /** The switch's SIP port on 127.0.0.1. */
  switchPort: number;
  /** This phone's own SIP port. */
  port: number;
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-vm-sipp-'));
let n = 0;

function scenario(name: string, body: string): string {
  const file = path.join(dir, `${name}-${++n}.xml`);
  writeFileSync(
    file,
    `<?xml version="1.0" encoding="ISO-8859-1" ?>\n<!DOCTYPE scenario SYSTEM "sipp.dtd">\n<scenario name="${name}">\n${body}\n</scenario>\n`,
  );
  return file;
}

function run(p: SippPhone, file: string, extra: string[] = []): SippRun {
  return runSipp(
    [
      `127.0.0.1:${p.switchPort}`,
      ...['-sf', file, '-i', '127.0.0.1', '-p', String(p.port), '-m', '1'],
      ...['-key', 'token', p.token, '-key', 'ext', p.ext, '-key', 'domain', p.domain],
      ...['-trace_msg', '-message_file', path.join(dir, `messages-${p.port}-${++n}.log`)],
      ...extra,
    ],
    { cwd: dir },
  );
}

const INVITE = (mediaPort: string) => `
  <send retrans="500"><![CDATA[
      INVITE sip:[service]@[domain] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:[ext]@[domain]>;tag=[pid]VM[call_number]
      To: <sip:[service]@[domain]>
      Call-ID: [call_id]
      CSeq: 1 INVITE
      Contact: <sip:[ext]@[local_ip]:[local_port]>
      Authorization: Bearer [token]
      Max-Forwards: 70
      Content-Type: application/sdp
      Content-Length: [len]

      v=0
      o=phone 1 1 IN IP[local_ip_type] [local_ip]
      s=-
      c=IN IP[media_ip_type] [media_ip]
      t=0 0
      m=audio ${mediaPort} RTP/AVP 0 101
      a=rtpmap:0 PCMU/8000
      a=rtpmap:101 telephone-event/8000
  ]]></send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="183" optional="true"/>
  <recv response="200" rtd="true"/>
  <send><![CDATA[
      ACK sip:[service]@[domain] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:[ext]@[domain]>;tag=[pid]VM[call_number]
      To: <sip:[service]@[domain]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Max-Forwards: 70
      Content-Length: 0
  ]]></send>`;

const BYE = `
  <send retrans="500"><![CDATA[
      BYE sip:[service]@[domain] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:[ext]@[domain]>;tag=[pid]VM[call_number]
      To: <sip:[service]@[domain]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 2 BYE
      Max-Forwards: 70
      Content-Length: 0
  ]]></send>
  <recv response="200"/>`;

const OK_TO_REQUEST = `
  <send><![CDATA[
      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0
  ]]></send>`;

/**
 * The phone calls `target` (an extension), waits `waitMs` after the answer while it streams `ulaw` (raw mu-law)
 * `loops` times from the start, then hangs up.
 */
export function phoneCallsAndSpeaks(p: SippPhone, target: string, ulaw: string, o: { waitMs: number; loops: number }) {
  const file = scenario(
    'phone-speaks',
    `${INVITE('[media_port]')}
  <nop><action><exec rtp_stream="${ulaw},${o.loops},0"/></action></nop>
  <pause milliseconds="${o.waitMs}"/>
${BYE}`,
  );
  return run(p, file, ['-s', target]);
}

/**
 * The phone dials the mailbox code; its media goes to `sink` (what it hears is kept there). Without `key` it
 * listens until the switch ends the call; with `key` it presses that key (RFC 4733, SIPp's capture) `keyAfterMs`
 * after the answer and hangs up 1.5 s later.
 */
export function phoneCallsMailbox(p: SippPhone, sink: number, o: { key?: string; keyAfterMs?: number } = {}) {
  const end =
    o.key === undefined
      ? `<recv request="BYE" timeout="90000"/>
${OK_TO_REQUEST}`
      : `<pause milliseconds="${o.keyAfterMs ?? 0}"/>
  <nop><action><exec play_pcap_audio="/usr/share/sip-tester/dtmf_2833_${o.key}.pcap"/></action></nop>
  <pause milliseconds="1500"/>
${BYE}`;
  const file = scenario(
    'phone-mailbox',
    `${INVITE(String(sink))}
  ${end}`,
  );
  return run(p, file, ['-s', '*97']);
}

/**
 * The phone SUBSCRIBEs to its message-summary and answers NOTIFYs 200 until it has seen one whose body holds
 * `expect` (a regular expression); SIPp fails the call when that NOTIFY does not come within 60 s.
 */
export function phoneSubscribesToMwi(p: SippPhone, expect: string, notifiesBefore = 0) {
  const before = Array.from({ length: notifiesBefore }, () => `<recv request="NOTIFY"/>${OK_TO_REQUEST}`).join('\n');
  const file = scenario(
    'phone-mwi',
    `  <send retrans="500"><![CDATA[
      SUBSCRIBE sip:[ext]@[domain] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:[ext]@[domain]>;tag=[pid]MWI[call_number]
      To: <sip:[ext]@[domain]>
      Call-ID: [call_id]
      CSeq: 1 SUBSCRIBE
      Contact: <sip:[ext]@[local_ip]:[local_port]>
      Authorization: Bearer [token]
      Event: message-summary
      Accept: application/simple-message-summary
      Expires: 600
      Max-Forwards: 70
      Content-Length: 0
  ]]></send>
  <recv response="200"/>
  ${before}
  <recv request="NOTIFY" timeout="60000">
    <action><ereg regexp="${expect}" search_in="body" check_it="true" assign_to="seen"/></action>
  </recv>
${OK_TO_REQUEST}
  <Reference variables="seen"/>`,
  );
  return run(p, file);
}
