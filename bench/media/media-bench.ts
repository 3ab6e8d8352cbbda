/**
 * Media bench: CPU per call (rtpengine utime+stime from /proc) and packet loss, with real RTP senders and
 * receivers on loopback, for bridged G.711 calls and for IVR channels (a prompt played by rtpengine to the
 * caller while the caller's speech is recorded by our IvrEndpoint). Steps rise until loss passes 0.1 %.
 *
 *   npx tsx bench/media/media-bench.ts [--steps 50,100,200,300] [--ivr-steps 50,100,200] [--seconds 10]
 *
 * Ports from test/support/ports.ts, below the kernel's ephemeral range and apart from any test run on the box: the
 * ng port and our sockets from this process's block, rtpengine's RTP ports a whole extra block (500 bridged calls).
 */
import { createSocket, type Socket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import {
  MediaEngines,
  MediaService,
  audioEndpoint,
  buildRtp,
  encodeG711,
  type PlaybackResult,
} from '../../media/index.js';
import { newSupervisor, quietLogger, tempDir } from '../../test/media/helpers.js';
import { tone } from '../../test/media/rtp-peer.js';
import { extraBlock, nextPort } from '../../test/support/ports.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i] ?? '', process.argv[i + 1] ?? '');
const SECONDS = Number(args.get('--seconds') ?? 10);
const STEPS = (args.get('--steps') ?? '50,100,200,300').split(',').map(Number);
const IVR_STEPS = (args.get('--ivr-steps') ?? '50,100,200').split(',').map(Number);
const TICKS = 100; // USER_HZ on Linux

/** A socket of ours on a port of this process's block (nextPort skips any port held right now). */
async function openSocket(): Promise<Socket> {
  for (let attempt = 0; attempt < 1000; attempt += 1) {
    const port = nextPort();
    const s = createSocket({ type: 'udp4', recvBufferSize: 1 << 18 });
    try {
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.bind(port, '127.0.0.1', () => resolve());
      });
      s.on('error', () => undefined);
      return s;
    } catch {
      s.close();
    }
  }
  throw new Error('no free port left in the test port block');
}

class Leg {
  sent = 0;
  received = 0;
  remotePort = 0;
  #seq = 0;
  #ts = 0;
  readonly #ssrc = Math.floor(Math.random() * 0xffffffff);
  constructor(readonly socket: Socket) {
    socket.on('message', () => (this.received += 1));
  }
  get port(): number {
    return this.socket.address().port;
  }
  sdp(): string {
    return [
      'v=0',
      'o=- 1 1 IN IP4 127.0.0.1',
      's=bench',
      'c=IN IP4 127.0.0.1',
      't=0 0',
      `m=audio ${this.port} RTP/AVP 0 101`,
      'a=rtpmap:0 PCMU/8000',
      'a=rtpmap:101 telephone-event/8000',
      'a=sendrecv',
      '',
    ].join('\r\n');
  }
  send(payload: Buffer): void {
    const pkt = buildRtp({ payloadType: 0, sequence: this.#seq++, timestamp: this.#ts, ssrc: this.#ssrc, payload });
    this.#ts += 160;
    this.sent += 1;
    this.socket.send(pkt, this.remotePort, '127.0.0.1');
  }
}

function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of proc(5))
}

/** Send one 20 ms packet on every sender, paced against the wall clock, for `seconds`. */
async function pace(senders: Leg[], payload: Buffer, seconds: number): Promise<void> {
  const start = Date.now();
  const total = seconds * 50;
  for (let n = 0; n < total; n += 1) {
    for (const leg of senders) leg.send(payload);
    const wait = start + (n + 1) * 20 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    else if (n % 10 === 0) await new Promise((r) => setImmediate(r));
  }
}

/** Wait until nothing more arrives (packets in flight at the end are late, not lost), at most 3 s. */
async function settle(count: () => number): Promise<void> {
  let last = -1;
  for (let waited = 0; waited < 3000 && count() !== last; waited += 300) {
    last = count();
    await new Promise((r) => setTimeout(r, 300));
  }
}

async function main(): Promise<void> {
  const data = tempDir('bench');
  const rtp = extraBlock();
  const supervisor = await newSupervisor(data.dir, { ngPort: nextPort(), portMin: rtp.first, portMax: rtp.last });
  await supervisor.start();
  const pid = supervisor.pid ?? 0;
  const media = new MediaService({
    engines: new MediaEngines({ urls: [], local: supervisor }),
    dataDir: data.dir,
    logger: quietLogger,
    engineRecordingDir: supervisor.recordingDir,
  });
  const payload = encodeG711(tone(440, 0.02), 0);
  const rows: string[] = [];
  try {
    console.log(
      `rtpengine pid ${pid}, ${SECONDS} s per step, 2-core box, load average ${loadavg()[0]?.toFixed(1)} at start`,
    );
    console.log('loss = 1 - received/sent; CPU = rtpengine utime+stime over the step, % of one core\n');
    console.log('bridged G.711 calls (A<->B through rtpengine, both directions 50 pps)');
    console.log('calls | pps in engine | engine CPU % of a core | per call % | bench process CPU % | loss %');
    for (const calls of STEPS) {
      const legs: Leg[] = [];
      for (let i = 0; i < calls; i += 1) {
        const a = new Leg(await openSocket());
        const b = new Leg(await openSocket());
        const id = `bench-${calls}-${i}`;
        b.remotePort = audioEndpoint(await media.offer(id, 'A', a.sdp()))?.port ?? 0;
        a.remotePort = audioEndpoint(await media.answer(id, 'A', 'B', b.sdp()))?.port ?? 0;
        legs.push(a, b);
      }
      const cpu0 = cpuTicks(pid);
      const own0 = process.cpuUsage();
      const t0 = Date.now();
      await pace(legs, payload, SECONDS);
      await settle(() => legs.reduce((sum, l) => sum + l.received, 0));
      const elapsed = (Date.now() - t0) / 1000;
      const enginePct = ((cpuTicks(pid) - cpu0) / TICKS / elapsed) * 100;
      const own = process.cpuUsage(own0);
      const ownPct = ((own.user + own.system) / 1e6 / elapsed) * 100;
      const sent = legs.reduce((s, l) => s + l.sent, 0);
      const received = legs.reduce((s, l) => s + l.received, 0);
      const loss = (1 - received / sent) * 100;
      const line = `${calls} | ${Math.round(sent / SECONDS)} | ${enginePct.toFixed(1)} | ${(enginePct / calls).toFixed(3)} | ${ownPct.toFixed(1)} | ${loss.toFixed(3)}`;
      console.log(line);
      if (loss > 0) {
        // Where the loss is: a few dead legs (setup) or spread thin (overload)?
        const short = legs.filter((l, i) => l.received < (legs[i ^ 1]?.sent ?? 0));
        const worst = Math.min(...legs.map((l, i) => l.received - (legs[i ^ 1]?.sent ?? 0)));
        console.log(`   legs short of packets: ${short.length} of ${legs.length}; worst leg missed ${-worst}`);
      }
      rows.push(`bridged ${line}`);
      for (let i = 0; i < calls; i += 1) await media.deleteSession(`bench-${calls}-${i}`);
      for (const l of legs) l.socket.close();
      if (loss > 0.1) break;
    }

    console.log('\nIVR channels (rtpengine plays a TTS prompt to the caller, transcoding WAV to PCMU; the caller');
    console.log('sends speech at 50 pps, recorded by our IvrEndpoint)');
    console.log(
      'channels | engine CPU % | per channel % | bench CPU % | prompt loss % | caller->recorder loss % | all playing after s',
    );
    const prompt = await media.tts.synthesize({
      text: 'Thank you for calling. Your call is important to us. Please hold while we connect you. '.repeat(2),
    });
    for (const channels of IVR_STEPS.filter((c) => c > 0)) {
      const callers: Leg[] = [];
      const ids: string[] = [];
      for (let i = 0; i < channels; i += 1) {
        const a = new Leg(await openSocket());
        const id = `ivr-${channels}-${i}`;
        a.remotePort = audioEndpoint(await media.answerIvr(id, 'A', a.sdp()))?.port ?? 0;
        callers.push(a);
        ids.push(id);
      }
      const cpu0 = cpuTicks(pid);
      const own0 = process.cpuUsage();
      const t0 = Date.now();
      // Let rtpengine learn each caller's address before the prompt starts.
      for (const a of callers) a.send(payload);
      const recordings = ids.map((id) => media.record(id, 'A', { maxLengthSec: SECONDS + 5, silenceTimeoutSec: 0 }));
      let lastStart = 0;
      // Starts spread over the first second, as arriving calls would be (a burst of hundreds of `play media`
      // at the same instant measures the engine's file opening, not steady-state media).
      const plays = ids.map(
        (id, i) =>
          new Promise<PlaybackResult>((resolve, reject) =>
            setTimeout(
              () => {
                const onStarted = (): void => {
                  lastStart = Date.now();
                };
                media.playFile(id, 'A', prompt.path, { onStarted }).then(resolve, reject);
              },
              (i * 1000) / channels,
            ),
          ),
      );
      const sending = pace(callers, payload, SECONDS);
      const played = await Promise.all(plays);
      await sending;
      await settle(() => ids.reduce((sum, id) => sum + media.ivrPacketsReceived(id, 'A'), 0));
      const elapsed = (Date.now() - t0) / 1000;
      const enginePct = ((cpuTicks(pid) - cpu0) / TICKS / elapsed) * 100;
      const own = process.cpuUsage(own0);
      const ownPct = ((own.user + own.system) / 1e6 / elapsed) * 100;
      // Each caller should get one packet per 20 ms of prompt.
      const expectedPrompt = played.reduce((sum, p) => sum + Math.floor(p.durationMs / 20), 0);
      const gotPrompt = callers.reduce((s, l) => s + l.received, 0);
      const promptLoss = Math.max(0, (1 - gotPrompt / expectedPrompt) * 100);
      const sent = callers.reduce((s, l) => s + l.sent, 0);
      const atRecorder = ids.reduce((s, id) => s + media.ivrPacketsReceived(id, 'A'), 0);
      const recLoss = Math.max(0, (1 - atRecorder / sent) * 100);
      await Promise.all(ids.map((id) => media.deleteSession(id)));
      await Promise.all(recordings);
      const line = `${channels} | ${enginePct.toFixed(1)} | ${(enginePct / channels).toFixed(3)} | ${ownPct.toFixed(1)} | ${promptLoss.toFixed(3)} | ${recLoss.toFixed(3)} | ${((lastStart - t0) / 1000).toFixed(1)}`;
      console.log(line);
      rows.push(`ivr ${line}`);
      for (const l of callers) l.socket.close();
      if (promptLoss > 0.1 || recLoss > 0.1) break;
    }
  } finally {
    await media.close();
    await supervisor.stop();
    data.remove();
  }
}

await main();
