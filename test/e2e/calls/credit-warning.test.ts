import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { setRate } from '../../../store/index.js';
import { decodeG711, rms } from '../../../media/g711.js';
import { parseRtp } from '../../../media/rtp-packet.js';
import { nextPorts } from '../../support/ports.js';
import { waitForBound } from '../../support/wait.js';
import path from 'node:path';
import { RtpSink, SCENARIOS, runSipp } from '../support/harness.js';
import { useCarrierSwitch } from '../support/carrier-switch.js';

/** An RTP receiver that keeps, per 20 ms packet, when it arrived and how loud it was. */
class TimedRtpSink {
  readonly socket = dgram.createSocket('udp4');
  readonly frames: Array<{ at: number; rms: number }> = [];

  async bind(port: number): Promise<this> {
    this.socket.on('message', (msg) => {
      const p = parseRtp(msg);
      if (p?.payloadType === 0) this.frames.push({ at: Date.now(), rms: rms(decodeG711(p.payload, 0)) });
    });
    await new Promise<void>((r) => this.socket.bind(port, '127.0.0.1', () => r()));
    return this;
  }

  /** Seconds of speech-level frames (RMS above 300) that arrived in [from, to). */
  speechBetween(from: number, to: number): number {
    return this.frames.filter((f) => f.at >= from && f.at < to && f.rms > 300).length * 0.02;
  }

  /** When the first speech-level frame arrived. */
  firstSpeech(): number | undefined {
    return this.frames.find((f) => f.rms > 300)?.at;
  }

  close(): void {
    this.socket.close();
  }
}

/**
 * Issue 23, item 1, "done when": a prepaid caller (a SIPp carrier calling the account's number, which Dials a
 * PSTN number: a calling card) with 90 s of allowance hears "one minute left" about 60 s before the cut, on its
 * leg only (the dialled party's RTP carries no speech then), and is cut at zero with BILL.0403. It takes about
 * 95 s: the account's default lead time (60 s) and the 90 s are kept as they are.
 */
describe('e2e: warn, then cut (prepaid)', function () {
  this.timeout(150_000);
  const DID = '+254711230001';
  const CALLEE = '+254722300099';
  const t = useCarrierSwitch({ did: DID });
  const calleeSinkPort = nextPorts(2); // its RTCP lands on the port above

  before(async () => {
    // The caller's inbound call (0.40 KES a minute) and its dialled leg (1.20 KES a minute) draw on one balance of
    // 2.40 KES, which admission requires (one first minute more at the leg's rate than the call already up): both
    // pay their 60 s first block on answer, then 1.60 KES a minute between them, so the money runs out at 90 s.
    await setRate(t.ctx.db, 'inbound', 40);
    await setRate(t.ctx.db, 'outbound', 120, CALLEE.slice(1));
    await t.ctx.db('accounts').where({ id: t.acct.id }).update({ balance_cents: 240 });
  });

  it('the paying leg alone hears the warning 60 s before the cut, and the call is cut at zero', async () => {
    t.server.verbs('/card', `<Response><Dial timeout="10"><Number>${CALLEE}</Number></Dial></Response>`);
    await t.setInboundUrl(t.server.url('/card'));
    t.sink.close(); // the suite's own sink on the caller's media port gives way to a timed one
    const caller = await new TimedRtpSink().bind(t.sinkPort); // what the paying caller hears
    const callee = await new TimedRtpSink().bind(calleeSinkPort);
    // Both SIPps outlive runSipp's default 65 s bound: the call lasts 90 s.
    const long = { limitMs: 140_000 };
    const uas = runSipp(
      [
        ...['-sf', path.join(SCENARIOS, 'uas-answer.xml'), '-key', 'media_sink', String(calleeSinkPort)],
        ...['-i', '127.0.0.1', '-p', String(t.carrierPort), '-m', '1', '-timeout', '130s'],
      ],
      long,
    );
    try {
      await waitForBound(t.carrierPort);
      t.sipp = runSipp(
        [
          `127.0.0.1:${t.ports.sip}`,
          ...['-sf', path.join(SCENARIOS, 'uac-inbound.xml'), '-key', 'media_sink', String(t.sinkPort)],
          ...['-s', DID.slice(1), '-i', '127.0.0.1', '-p', String(t.callerPort), '-m', '1', '-timeout', '130s'],
        ],
        long,
      );
      assert.equal(await t.sipp.exited, 0, t.sipp.output()); // the switch's BYE ends it
      assert.equal(await uas.exited, 0, uas.output());

      const parent = await t.ctx.db('calls').where({ to_number: DID }).orderBy('created_at', 'desc').first();
      const leg = await t.ctx.db('calls').where({ parent_call_id: parent.id }).first();
      assert.equal(parent.reason_code, 'BILL.0403', 'the call was cut because the allowance ran out');
      assert.equal(leg.status, 'completed');
      const answered = Date.parse(leg.answered_at);
      const ended = Date.parse(leg.ended_at);
      const talk = (ended - answered) / 1000;
      assert.ok(talk >= 89 && talk <= 93, `cut after ${talk.toFixed(1)} s of the 90 s allowance`);

      // The warning on the stream (and the call's events), once for the leg that pays.
      const warnings = await t.ctx.db('call_events').where({ code: 'BILL.0311', call_id: leg.id });
      assert.equal(warnings.length, 1, 'BILL.0311 once for the dialled leg');
      const data = JSON.parse(warnings[0].data);
      assert.equal(data.leadSeconds, 60);
      assert.ok(data.secondsLeft >= 59 && data.secondsLeft <= 61, `secondsLeft ${data.secondsLeft}`);

      // The caller heard speech starting about 60 s before the cut, and nothing before it.
      const heardAt = caller.firstSpeech();
      assert.ok(heardAt, 'the caller heard the notice');
      const lead = (ended - heardAt!) / 1000;
      assert.ok(lead >= 57 && lead <= 63, `the notice began ${lead.toFixed(1)} s before the cut`);
      const spoken = caller.speechBetween(heardAt!, heardAt! + 5000);
      assert.ok(spoken >= 0.8, `the caller heard ${spoken.toFixed(2)} s of the notice`);
      // The dialled party heard nothing of it: no speech-level RTP in that window, nor at any time.
      assert.equal(callee.speechBetween(heardAt! - 1000, heardAt! + 6000), 0, 'the other leg was silent');
      assert.equal(callee.firstSpeech(), undefined);
    } finally {
      uas.kill();
      caller.close();
      callee.close();
      t.sink = await new RtpSink().bind(t.sinkPort); // for the suite's afterEach to close
    }
  });
});
