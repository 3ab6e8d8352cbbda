import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { allocateSwitchPorts, startTestSwitch } from '../support/harness.js';

const PORTS = allocateSwitchPorts();
const SIP = PORTS.sip;
const FLOOD_SECONDS = 5;

const head = (method: string, port: number, callId: string, via?: string) =>
  `${method} sip:probe@127.0.0.1:${SIP} SIP/2.0\r\n` +
  `Via: ${via ?? `SIP/2.0/UDP 127.0.0.1:${port};branch=z9hG4bK${callId};rport`}\r\n` +
  `From: <sip:probe@127.0.0.1>;tag=${callId}\r\nTo: <sip:probe@127.0.0.1:${SIP}>\r\nCall-ID: ${callId}\r\n` +
  `CSeq: 1 ${method}\r\nMax-Forwards: 70\r\n`;

/**
 * Messages built to make a backtracking or quadratic parser stall, each about 60 KB (the largest datagram is
 * 64 KB): a Via with a long run of spaces, runs of list separators, a quoted string of escapes, an unclosed
 * angle bracket, thousands of header fields, and a well-formed request whose headers are long runs of spaces
 * (it parses, so the gate counts it and bans the source after 30 in 2 s).
 */
function pathological(port: number, n: number): Buffer[] {
  const id = `patho${n}`;
  const pad = (k: number) => ' '.repeat(k);
  return [
    head('OPTIONS', port, id, `SIP/2.0/UDP${pad(60_000)}127.0.0.1:${port};branch=z9hG4bK${id}`) +
      'Content-Length: 0\r\n\r\n',
    head('OPTIONS', port, id) + `Supported: ${',;'.repeat(30_000)}x\r\nContent-Length: 0\r\n\r\n`,
    head('OPTIONS', port, id).replace('From: <', `From: "${'\\"'.repeat(29_000)} <`) + 'Content-Length: 0\r\n\r\n',
    head('OPTIONS', port, id) + `Contact: <sip:a@b${';x='.repeat(19_000)}\r\nContent-Length: 0\r\n\r\n`,
    head('OPTIONS', port, id) + 'X-A: b\r\n'.repeat(7_400) + 'Content-Length: 0\r\n\r\n',
    head('OPTIONS', port, id) + `X-Pad: a${pad(7_000)}b\r\n`.repeat(8) + 'Content-Length: 0\r\n\r\n',
  ].map((s) => Buffer.from(s));
}

/**
 * Issue 22 "done when": while one source sends pathological SIP messages at 100/s, the switch's event loop keeps
 * turning (p99 delay logged; asserted under a generous bound that the old multi-second parser stalls break) and a
 * second source's OPTIONS are all answered. The pathological source may be flood-banned on the way; from then on
 * its datagrams are dropped before parsing (the gate's droppedBeforeParse counts them).
 */
describe('e2e: pathological SIP messages at 100/s against the switch', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;

  before(async () => {
    ctx = await startTestSwitch(PORTS);
  });
  after(async () => {
    await ctx?.sw.stop();
  });

  it('the event loop keeps turning and every OPTIONS of another source is answered', async () => {
    const bad = dgram.createSocket('udp4');
    const good = dgram.createSocket('udp4');
    await new Promise<void>((r) => bad.bind(0, '127.0.0.2', () => r()));
    await new Promise<void>((r) => good.bind(0, '127.0.0.3', () => r()));
    const badPort = bad.address().port;
    const goodPort = good.address().port;
    const answered = new Set<string>();
    good.on('message', (m) => {
      const text = m.toString();
      const callId = /\r\nCall-ID: *([^\r\n]+)/i.exec(text)?.[1];
      if (callId && /^SIP\/2\.0 200 /.test(text)) answered.add(callId);
    });
    const sentGood: string[] = [];
    let sentBad = 0;

    const kinds = Array.from({ length: 4 }, (_, i) => pathological(badPort, i)).flat();
    const start = Date.now();
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    // 100/s from the bad source (built beforehand, so the sending costs this process little), cycling through the
    // kinds; each tick catches up with the schedule, as timers drift.
    const badTimer = setInterval(() => {
      const due = Math.floor((Date.now() - start) / 10);
      for (; sentBad < due; sentBad++) bad.send(kinds[sentBad % kinds.length], SIP, '127.0.0.1');
    }, 10);
    // 10/s OPTIONS from the good source.
    const goodTimer = setInterval(() => {
      const id = `good${sentGood.length}`;
      sentGood.push(id);
      good.send(Buffer.from(head('OPTIONS', goodPort, id) + 'Content-Length: 0\r\n\r\n'), SIP, '127.0.0.1');
    }, 100);
    await new Promise((r) => setTimeout(r, FLOOD_SECONDS * 1000));
    clearInterval(badTimer);
    clearInterval(goodTimer);
    loop.disable();
    const elapsed = (Date.now() - start) / 1000;
    // Answers still in flight arrive within a moment; UDP OPTIONS are not retransmitted by this raw client.
    for (let i = 0; i < 40 && answered.size < sentGood.length; i++) await new Promise((r) => setTimeout(r, 50));
    bad.close();
    good.close();

    const stats = ctx.sw.sip!.securityStats()!;
    const ban = await ctx.db('ip_bans').where({ address: '127.0.0.2' }).first();
    const p50 = loop.percentile(50) / 1e6;
    const p99 = loop.percentile(99) / 1e6;
    const max = loop.max / 1e6;
    console.log(
      `      ${sentBad} pathological datagrams in ${elapsed.toFixed(1)} s (${(sentBad / elapsed).toFixed(0)}/s); ` +
        `event-loop delay p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${max.toFixed(1)} ms; ` +
        `other source: ${answered.size}/${sentGood.length} OPTIONS answered; ` +
        `bad source ${ban ? `banned (${ban.reason})` : 'not banned'}, ${stats.droppedBeforeParse} datagrams dropped before parsing`,
    );
    assert.ok(sentBad >= FLOOD_SECONDS * 95, `the flood ran (${sentBad} sent)`);
    assert.deepEqual(
      sentGood.filter((id) => !answered.has(id)),
      [],
      'every OPTIONS of the other source was answered',
    );
    // The goal is p99 < 50 ms (logged above); the assertion is generous so a busy test box cannot flake it, yet the
    // old parser's multi-second stalls on these messages fail it.
    assert.ok(p99 < 500, `event-loop delay p99 ${p99.toFixed(1)} ms`);
    if (ban) assert.ok(stats.droppedBeforeParse > 0, 'once banned, its datagrams are dropped before parsing');
  });
});
