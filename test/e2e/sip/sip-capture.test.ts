import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { readPcapUdp } from '../../../media/pcap-reader.js';
import { HepCollector } from '../../support/hep-collector.js';
import { nextPort } from '../../support/ports.js';
import { waitForBound } from '../../support/wait.js';
import { carrier } from '../support/harness.js';
import { useCarrierSwitch } from '../support/carrier-switch.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');
const run = promisify(execFile);
const HEP_PORT = nextPort();
const CAPTURE_ID = 2042;
/** Where the dialled carrier aims its media (nobody needs to hear it here). */
const CALLEE_MEDIA = nextPort();

/** The method of a request, or the status of a response, and the CSeq method it belongs to. */
function kind(message: string): string {
  const first = message.slice(0, message.indexOf('\r\n'));
  const cseq = /\r\nCSeq:\s*\d+\s+(\w+)/i.exec(message)?.[1] ?? '?';
  const status = /^SIP\/2\.0 (\d{3})/.exec(first)?.[1];
  return status ? `${status} ${cseq}` : first.split(' ')[0]!;
}
/** Retries `check` until it stops throwing (10 s at most), then throws its last error. */
async function eventually(check: () => void, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return check();
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(e as Error).message}`, { cause: e });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
const callIdOf = (message: string) => /\r\n(?:Call-ID|i):\s*(\S+)/i.exec(message)?.[1] ?? '';

/**
 * SIP capture: every message of a call's two legs reaches a HEP collector (the test's decoder, then Debian's sngrep)
 * with the call's sid as correlation id; `simu trace --pcap` writes them for Wireshark; a dead collector costs nothing.
 */
describe('e2e: SIP capture (HEPv3, sngrep, simu trace)', function () {
  this.timeout(90000);
  const DID = '+254711300001';
  const t = useCarrierSwitch({
    did: DID,
    env: { SIMU_HEP_URL: `udp:127.0.0.1:${HEP_PORT}`, SIMU_HEP_CAPTURE_ID: String(CAPTURE_ID) },
  });

  /** The carrier calls the DID, whose document Dials a PSTN number at the carrier; resolves with the call's row. */
  async function bridgedCall(): Promise<{ id: string; sid: string }> {
    t.server.verbs(
      '/dial',
      `<Response><Dial timeout="10" timeLimit="2" callerId="${DID}"><Number>+254722000077</Number></Dial></Response>`,
    );
    await t.setInboundUrl(t.server.url('/dial'));
    const uas = carrier({ port: t.carrierPort, sink: CALLEE_MEDIA });
    try {
      await waitForBound(t.carrierPort);
      t.sipp = t.carrierCalls();
      assert.equal(await t.sipp.exited, 0, t.sipp.output());
      assert.equal(await uas.exited, 0, uas.output());
    } finally {
      uas.kill();
    }
    const row = await t.ctx.db('calls').where({ to_number: DID }).orderBy('created_at', 'desc').first();
    return { id: row.id, sid: row.sid };
  }

  const legsOf = (messages: string[]) => {
    const byCallId = new Map<string, string[]>();
    for (const m of messages) byCallId.set(callIdOf(m), [...(byCallId.get(callIdOf(m)) ?? []), kind(m)]);
    return [...byCallId.values()];
  };

  it('sends both legs of a call as HEPv3: INVITE, 200, ACK and BYE each, with the sid as correlation id', async () => {
    const collector = await new HepCollector().bind(HEP_PORT);
    try {
      const call = await bridgedCall();
      const sip = t.ports.sip;
      await eventually(() => {
        const mine = collector.packets.filter((p) => p.correlationId === call.sid);
        const legs = legsOf(mine.map((p) => p.payload));
        assert.equal(legs.length, 2, `two legs under ${call.sid}: ${JSON.stringify(legs)}`);
        for (const leg of legs)
          for (const k of ['INVITE', '200 INVITE', 'ACK', 'BYE', '200 BYE'])
            assert.ok(leg.includes(k), `${k} in ${leg.join(', ')}`);
      }, 'both legs captured');
      assert.deepEqual(collector.errors, []);
      const mine = collector.packets.filter((p) => p.correlationId === call.sid);
      for (const p of mine) {
        assert.equal(p.family, 2);
        assert.equal(p.ipProtocol, 17);
        assert.equal(p.protocolType, 1, 'SIP');
        assert.equal(p.captureId, CAPTURE_ID);
        assert.deepEqual(p.types.slice(0, 2), [1, 2]);
        assert.ok(Math.abs(p.seconds - Date.now() / 1000) < 60 && p.micros < 1e6);
        assert.ok(p.srcPort === sip || p.dstPort === sip, 'one end is the switch');
      }
      // The addresses are the wire's: the caller's INVITE from SIPp to the switch, the dialled INVITE to the carrier.
      const invites = mine.filter((p) => p.payload.startsWith('INVITE '));
      const inbound = invites.find((p) => p.dstPort === sip)!;
      const outbound = invites.find((p) => p.srcPort === sip)!;
      assert.equal(`${inbound.src}:${inbound.srcPort}`, `127.0.0.1:${t.callerPort}`);
      assert.equal(`${outbound.dst}:${outbound.dstPort}`, `127.0.0.1:${t.carrierPort}`);
      assert.equal(outbound.src, '127.0.0.1');
    } finally {
      await collector.close();
    }
  });

  it("sngrep -N -L (Debian's) receives the call flow: its pcap holds both legs with the right addresses", async function () {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-sngrep-'));
    const file = path.join(dir, 'out.pcap');
    let sngrep: ChildProcess | undefined;
    try {
      sngrep = spawn('sngrep', ['-N', '-q', '-L', `udp:127.0.0.1:${HEP_PORT}`, '-O', file], { stdio: 'ignore' });
      await waitForBound(HEP_PORT, 'UDP');
      const call = await bridgedCall();
      await new Promise((r) => setTimeout(r, 500)); // the HEP sender holds each packet 100-200 ms
      sngrep.kill('SIGTERM');
      await new Promise((r) => sngrep!.once('exit', r));
      const packets = readPcapUdp(readFileSync(file));
      const messages = packets.map((p) => p.payload.toString('utf8'));
      const sip = t.ports.sip;
      const legs = legsOf(messages.filter((m) => callIdOf(m)));
      assert.equal(legs.length, 2, JSON.stringify(legs));
      for (const leg of legs)
        for (const k of ['INVITE', '200 INVITE', 'ACK', 'BYE', '200 BYE'])
          assert.ok(leg.includes(k), `${k} in ${leg.join(', ')}`);
      const invite = (toPort: number) =>
        packets.find((p) => p.payload.toString('latin1').startsWith('INVITE ') && p.dstPort === toPort);
      assert.equal(invite(sip)?.srcPort, t.callerPort, 'the carrier INVITEs the switch');
      assert.equal(invite(t.carrierPort)?.srcPort, sip, 'the switch INVITEs the carrier');
      const { stdout } = await run('tcpdump', ['-nAr', file]);
      assert.match(
        stdout,
        new RegExp(`127\\.0\\.0\\.1\\.${sip} > 127\\.0\\.0\\.1\\.${t.carrierPort}: UDP.*\\n.*INVITE sip:`),
      );
      assert.ok(call.sid);
    } finally {
      sngrep?.kill('SIGKILL');
    }
  });

  it('simu trace CALL --pcap writes the ladder the switch keeps, which tcpdump reads; text without --pcap', async () => {
    const call = await bridgedCall();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-trace-'));
    const file = path.join(dir, 'call.pcap');
    const env = {
      ...process.env,
      SIMU_DATA_DIR: t.ctx.config.dataDir,
      SIMU_HTTP_HOST: '127.0.0.1',
      SIMU_HTTP_PORT: String(t.ports.http),
    };
    const simu = (args: string[]) => run(path.join(ROOT, 'bin', 'simu'), args, { env, cwd: os.tmpdir() });
    const written = await simu(['trace', call.sid, '--pcap', file]);
    assert.match(written.stdout, /SIP messages of call_/);
    assert.ok(existsSync(file));
    // tcpdump reads it (each packet's IP and UDP headers and checksums are well formed: -vv checks them).
    const { stdout } = await run('tcpdump', ['-nAr', file]);
    const sip = t.ports.sip;
    const invite = (from: number, to: number) =>
      new RegExp(`127\\.0\\.0\\.1\\.${from} > 127\\.0\\.0\\.1\\.${to}: UDP.*\\n.*INVITE sip:`);
    assert.match(stdout, invite(t.callerPort, sip));
    assert.match(stdout, invite(sip, t.carrierPort));
    const checked = await run('tcpdump', ['-nvvr', file]);
    assert.doesNotMatch(checked.stdout, /bad (udp )?cksum/i);
    const legs = legsOf(readPcapUdp(readFileSync(file)).map((p) => p.payload.toString('utf8')));
    assert.equal(legs.length, 2, JSON.stringify(legs));
    for (const leg of legs) for (const k of ['INVITE', '200 INVITE', 'ACK', 'BYE']) assert.ok(leg.includes(k));
    // By uuid too, as text, in order: the caller's INVITE first.
    const text = (await simu(['trace', call.id])).stdout.trim().split('\n');
    assert.match(text[0]!, new RegExp(`127\\.0\\.0\\.1:${t.callerPort} +-> 127\\.0\\.0\\.1:${sip} +UDP +INVITE sip:`));
    // An unknown call, and a request without the token, are refused.
    await assert.rejects(simu(['trace', 'call_nope']), /No SIP messages are kept for this call/);
    const anonymous = await fetch(`${t.ctx.baseUrl}/console/api/calls/${call.sid}/sip`);
    assert.equal(anonymous.status, 401);
  });

  it('with the collector gone, calls go on as before and the packets it missed are counted as dropped', async () => {
    // Nothing listens on HEP_PORT now: the connected socket's sends are refused (ICMP), each one counted.
    const before = t.ctx.sw.sip!.capture!.figures().hep!;
    const started = Date.now();
    await bridgedCall();
    const took = Date.now() - started;
    await eventually(() => {
      const after = t.ctx.sw.sip!.capture!.figures().hep!;
      assert.ok(after.dropped > before.dropped, `dropped ${before.dropped} -> ${after.dropped}`);
      assert.equal(after.queued, 0);
    }, 'drops counted');
    assert.ok(took < 20_000, `the call took ${took} ms`);
  });
});
