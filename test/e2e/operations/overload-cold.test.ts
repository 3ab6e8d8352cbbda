import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { addCarrier, allocateSwitchPorts, startTestSwitch } from '../support/harness.js';
import type { NewCallGate } from '../../../overload/index.js';
import { eventually } from '../../support/wait.js';
import { nextPort } from '../../support/ports.js';

const PORTS = allocateSwitchPorts();
const CARRIER = nextPort(); // the carrier trunk (127.0.0.1): its INVITEs are matched, and it is never flood-banned

/**
 * The completion bound through the real switch and its UDP front (docs/overload.md, "The completion bound"): a switch
 * just started admits new calls at `SIMU_OVERLOAD_INITIAL_CPS` until their set-ups complete, so a burst onto it is
 * refused by the front at once, beyond a token or two, and each admitted call's final answer (a 404 for a number
 * nobody owns) is reported to the gate; with the loop to spare the bound rises and the same rate is taken in full.
 */
describe('e2e: a switch started cold admits new calls no faster than their set-ups complete', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let sock: dgram.Socket;
  const finals = new Map<string, number>();
  let sent = 0;
  /** Set-ups the SIP edge reported complete to the gate. */
  let completed = 0;

  before(async () => {
    ctx = await startTestSwitch({
      ...PORTS,
      env: { SIMU_OVERLOAD_INITIAL_CPS: '10', SIMU_OVERLOAD_UDP_FRONT: 'true' },
    });
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
    // The gate the SIP edge reports to (a private dependency, read for the count).
    const gate = (ctx.sw.sip as unknown as { deps: { overload: NewCallGate } }).deps.overload;
    const noteCompleted = gate.noteCompleted!.bind(gate);
    gate.noteCompleted = () => {
      completed++;
      noteCompleted();
    };
    sock = dgram.createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
    sock.on('message', (buf) => {
      const text = buf.toString();
      const callId = /\r\nCall-ID: *([^\r]+)/i.exec(text)?.[1];
      const status = /^SIP\/2\.0 ([2-6]\d\d)/.exec(text)?.[1];
      if (callId && status) finals.set(callId, Number(status));
    });
  });

  after(async () => {
    sock?.close();
    await ctx?.sw.stop();
  });

  /** Sends `n` new INVITEs at once; resolves with how many got 503 and how many another final answer. */
  async function burst(n: number): Promise<{ refused: number; admitted: number }> {
    const ids: string[] = [];
    const local = sock.address().port;
    for (let i = 0; i < n; i++) {
      const id = `cold-${++sent}-${process.pid}@127.0.0.1`;
      ids.push(id);
      const msg = [
        `INVITE sip:254799000000@127.0.0.1:${PORTS.sip} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${local};branch=z9hG4bK-cold-${sent}-${process.pid};rport`,
        `From: <sip:+254733555000@127.0.0.1:${local}>;tag=c${sent}`,
        `To: <sip:254799000000@127.0.0.1:${PORTS.sip}>`,
        `Call-ID: ${id}`,
        'CSeq: 1 INVITE',
        `Contact: <sip:carrier@127.0.0.1:${local}>`,
        'Max-Forwards: 70',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n');
      sock.send(msg, PORTS.sip, '127.0.0.1');
    }
    await eventually(() => ids.every((id) => finals.has(id)), `final answers to ${n} INVITEs`);
    const refused = ids.filter((id) => finals.get(id) === 503).length;
    return { refused, admitted: n - refused };
  }

  it('a burst onto the fresh switch: all but a few refused by the front, at once', async () => {
    // A second idle: the front's bucket holds its most, minCps (10) tokens, at the initial 10/s.
    await new Promise((r) => setTimeout(r, 1200));
    const r = await burst(40);
    // Those tokens and no more (the bound off: all 40 admitted).
    assert.ok(r.admitted >= 1 && r.admitted <= 12, `admitted ${r.admitted} of 40`);
    assert.equal(completed, r.admitted, 'each admitted call told the gate when its final answer went out');
  });

  it('with the loop to spare, the bound rises and the rate offered is taken in full', async () => {
    // 100 calls a second, in bursts of 5 every 50 ms, for 3 s. Without completions the bound would stay at 10/s.
    const seconds: { admitted: number; refused: number }[] = [];
    for (let s = 0; s < 3; s++) {
      const second = { admitted: 0, refused: 0 };
      for (let i = 0; i < 20; i++) {
        const started = Date.now();
        const r = await burst(5);
        second.admitted += r.admitted;
        second.refused += r.refused;
        await new Promise((done) => setTimeout(done, Math.max(0, 50 - (Date.now() - started))));
      }
      seconds.push(second);
    }
    const last = seconds.at(-1)!;
    assert.ok(last.admitted >= 50, `the last second admitted ${last.admitted} of 100: ${JSON.stringify(seconds)}`);
    assert.ok(seconds[0]!.refused > 0, `the first second refused some: ${JSON.stringify(seconds)}`);
  });
});
