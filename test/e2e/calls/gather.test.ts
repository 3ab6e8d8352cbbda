import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readPcapUdp } from '../../../media/pcap-reader.js';
import { parseRtp } from '../../../media/rtp-packet.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import { within } from '../../support/wait.js';
import {
  AccountServer,
  RtpSink,
  SCENARIOS,
  addCarrier,
  allocateSwitchPorts,
  api,
  carrierCallsDid,
  createAccountWithDid,
  startTestSwitch,
  type SippRun,
  type TestAccount,
} from '../support/harness.js';

const PORTS = allocateSwitchPorts();
const SINK = nextPort();
const CARRIER = nextPort();
const CALLER = nextPort();
const CALLER_MEDIA = nextPorts(4);

const PROMPT = 'Please enter your account number, followed by the pound key. Your account number is on your bill.';

/**
 * Issue 16, items 1 and 2: <Gather> hears the caller's keys from every source a phone or carrier uses, with real
 * peers. SIPp presses keys as RFC 4733 events (its own captures), as SIP INFO, and as in-band tones from a leg
 * that negotiated no telephone-event (sox-made DTMF streamed by SIPp); the action gets them as Digits. Barge-in:
 * the prompt's RTP stops reaching the caller within 200 ms of the first key.
 */
describe('e2e: Gather hears keys (RFC 4733, SIP INFO, in-band tones) and barges in on its prompt', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  const server = new AccountServer();
  let sink: RtpSink;
  let sipp: SippRun | undefined;
  const DID = '+254711600001';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-gather-'));

  before(async () => {
    ctx = await startTestSwitch(PORTS);
    await server.listen();
    acct = await createAccountWithDid(ctx.db, DID);
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status') });
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
    server.verbs('/got', '<Response><Hangup/></Response>');
  });

  beforeEach(async () => {
    sink = await new RtpSink().bind(SINK);
  });

  afterEach(() => {
    sipp?.kill();
    sink.close();
  });

  after(async () => {
    await server.close();
    await ctx?.sw.stop();
  });

  async function answerWith(xml: string) {
    server.verbs('/in', xml);
    await ctx
      .db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/in') });
  }

  function call(scenario: string, extra: string[] = []) {
    return carrierCallsDid({ sip: PORTS.sip, did: DID, port: CALLER, sink: SINK, scenario, extra });
  }

  /** The action requests the account's server got since `before`. */
  function actions(before: number) {
    return server.requests.slice(before).filter((r) => r.url === '/got');
  }

  const gatherDoc = (attrs = '') =>
    `<Response><Gather action="${server.url('/got')}" timeout="4"${attrs}><Say>${PROMPT}</Say></Gather>` +
    '<Say>We did not hear anything.</Say></Response>';

  it('RFC 4733 keys from SIPp (its dtmf_2833 captures) reach the action as Digits; # submits', async () => {
    await answerWith(gatherDoc());
    const before = server.requests.length;
    sipp = call('uac-inbound-keys.xml', ['-mp', String(CALLER_MEDIA)]);
    assert.equal(await sipp.exited, 0, sipp.output());
    const got = actions(before);
    assert.equal(got.length, 1, 'one action request');
    // Each key reaches the call twice (our endpoint reads its first packet, rtpengine logs it when it ends): '12'
    // rather than '1122' is also the proof that one press reported by two sources counts once.
    assert.equal(got[0]!.json.Digits, '12');
    assert.match(got[0]!.json.CallSid, /^call_/, 'the usual call-control fields beside Digits');
    const codes = server.requests.slice(before).map((r) => r.json?.code);
    assert.ok(codes.includes('GATHER.0100') && codes.includes('GATHER.0200'), codes.join());
    const completed = server.requests.slice(before).find((r) => r.json?.code === 'GATHER.0200')!.json;
    assert.equal(completed.data.digits, '12');
    assert.equal(completed.data.end, 'finish_key');
    // The call was ringing when the Gather came: it answered it first, and listened from then on (event ids are
    // UUIDv7, in emission order).
    const last = (await api(ctx.baseUrl, acct.key, 'GET', '/api/calls/?limit=1')).body.calls[0];
    const order = (await ctx.db('call_events').where({ call_id: last.uuid }).orderBy('id')).map(
      (e: { code: string }) => e.code,
    );
    assert.ok(order.indexOf('CALL.0200') < order.indexOf('GATHER.0100'), order.join());
  });

  it('SIP INFO keys (application/dtmf-relay and application/dtmf) are answered 200 and reach the action', async () => {
    await answerWith(gatherDoc());
    const before = server.requests.length;
    sipp = call('uac-inbound-info.xml'); // the scenario fails unless each INFO gets its 200
    assert.equal(await sipp.exited, 0, sipp.output());
    const got = actions(before);
    assert.equal(got.length, 1, 'one action request');
    assert.equal(got[0]!.json.Digits, '42');
  });

  it('a leg without telephone-event: its keys, sent as tones (sox), are heard in its audio', async () => {
    // 1 s of silence, then 3, 7 and # as 120 ms dual tones at -10 dBFS each, 150 ms apart, as raw mu-law.
    const parts: string[] = [];
    const silence = path.join(dir, 'silence.wav');
    execFileSync('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', silence, 'trim', '0', '1']);
    parts.push(silence);
    for (const [key, row, col] of [
      ['3', 697, 1477],
      ['7', 852, 1209],
      ['pound', 941, 1477],
    ] as const) {
      const f = path.join(dir, `${key}.wav`);
      execFileSync('sox', [
        ...['-n', '-r', '8000', '-c', '1', '-b', '16', f],
        ...['synth', '0.12', 'sine', String(row), 'sine', String(col), 'remix', '1v0.316,2v0.316'],
        ...['pad', '0', '0.15'],
      ]);
      parts.push(f);
    }
    const tail = path.join(dir, 'tail.wav');
    execFileSync('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', tail, 'trim', '0', '2']);
    const ulaw = path.join(dir, 'tones.ulaw');
    execFileSync('sox', [...parts, tail, '-t', 'ul', '-r', '8000', '-c', '1', ulaw]);
    const scenario = path.join(dir, 'uac-inbound-tones.xml');
    writeFileSync(
      scenario,
      readFileSync(path.join(SCENARIOS, 'uac-inbound-tones.xml'), 'utf8').replaceAll('[tones]', ulaw),
    );
    await answerWith(gatherDoc());
    const before = server.requests.length;
    sipp = call(scenario, ['-mp', String(CALLER_MEDIA)]);
    assert.equal(await sipp.exited, 0, sipp.output());
    const got = actions(before);
    assert.equal(got.length, 1, 'one action request');
    assert.equal(got[0]!.json.Digits, '37');
  });

  it('no input: the next verb runs after the timeout; with actionOnEmptyResult the action gets empty Digits', async () => {
    server.verbs('/after', '<Response><Hangup/></Response>');
    const doc = (attrs: string) =>
      `<Response><Gather action="${server.url('/got')}" timeout="1"${attrs}><Say>Press a key.</Say></Gather>` +
      `<Redirect>${server.url('/after')}</Redirect></Response>`;
    await answerWith(doc(''));
    let before = server.requests.length;
    sipp = call('uac-inbound.xml'); // a caller that presses nothing
    assert.equal(await sipp.exited, 0, sipp.output());
    let urls = server.requests.slice(before).map((r) => r.url);
    assert.ok(urls.includes('/after') && !urls.includes('/got'), urls.join());
    const completed = server.requests.slice(before).find((r) => r.json?.code === 'GATHER.0200')!.json;
    assert.deepEqual([completed.data.digits, completed.data.end], ['', 'timeout']);

    await answerWith(doc(' actionOnEmptyResult="true"'));
    before = server.requests.length;
    sipp = call('uac-inbound.xml');
    assert.equal(await sipp.exited, 0, sipp.output());
    urls = server.requests.slice(before).map((r) => r.url);
    assert.ok(!urls.includes('/after'), urls.join());
    assert.equal(actions(before)[0]?.json.Digits, '');
  });

  it('barge-in: the prompt stops reaching the caller within 200 ms of its first key; the Gather goes on listening', async () => {
    await answerWith(
      `<Response><Gather action="${server.url('/got')}" numDigits="4" timeout="2"><Say>${PROMPT}</Say></Gather></Response>`,
    );
    // What the caller hears arrives at the sink; note each prompt packet's arrival and where it came from.
    // The key is pressed as the 50th packet (a second of the prompt) arrives, from the packet's own handler: a
    // poll could press it later than the prompt's last packet on a busy box, and measure that delay instead.
    const prompt: number[] = [];
    let engine: { address: string; port: number } | undefined;
    let secondHeard!: () => void;
    const aSecondHeard = new Promise<void>((resolve) => (secondHeard = resolve));
    sink.socket.on('message', (msg, rinfo) => {
      if (parseRtp(msg)?.payloadType !== 0) return;
      prompt.push(performance.now());
      engine ??= { address: rinfo.address, port: rinfo.port };
      if (prompt.length === 50) secondHeard();
    });
    const events = readPcapUdp(readFileSync('/usr/share/sip-tester/dtmf_2833_5.pcap'))
      .map((p) => p.payload)
      .filter((p) => parseRtp(p)?.payloadType === 101);
    const before = server.requests.length;
    sipp = call('uac-inbound.xml');
    await within(aSecondHeard, 15000, 'a second of the prompt heard');
    // The caller presses 5: SIPp's own RFC 4733 capture, sent from the caller's media address in real time.
    const firstKeyAt = performance.now();
    for (const packet of events) {
      sink.socket.send(packet, engine!.port, engine!.address);
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(await sipp.exited, 0, sipp.output());
    // The prompt (~7 s, 350 packets) was cut short, and stopped soon after the key.
    assert.ok(prompt.length < 200, `the whole prompt was heard (${prompt.length} packets): the key did not stop it`);
    const lastPromptMs = prompt[prompt.length - 1]! - firstKeyAt;
    const afterKey = prompt.filter((t) => t > firstKeyAt).length;
    console.log(
      `      barge-in: last prompt packet ${lastPromptMs.toFixed(0)} ms after the first key (${afterKey} after it)`,
    );
    assert.ok(lastPromptMs < 200, `prompt RTP still arriving ${lastPromptMs.toFixed(0)} ms after the key`);
    const got = actions(before);
    assert.equal(got.length, 1, 'one action request');
    assert.equal(got[0]!.json.Digits, '5', 'the Gather kept listening until its timeout, then sent the one key');
  });
});
