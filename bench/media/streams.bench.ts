/**
 * How many media streams one box carries (issue 18 item 3): N calls, each with the caller's audio arriving as real
 * PCMU RTP at the platform's own IVR endpoint (media/ivr-endpoint.ts, the socket Say/Record use) and forked by a
 * real MediaStream (media/streams/media-stream.ts: Twilio Media Streams JSON over ws, back-pressure by dropping) to
 * a WebSocket server on loopback. With --connect the streams are bidirectional (<Connect><Stream>): the server
 * sends every media message straight back, and the stream plays it to the caller at 20 ms a frame.
 *
 * Three threads, as on a real box the callers and the customer's server are elsewhere: a worker plays the callers
 * (one UDP socket each, 50 packets a second, counting what comes back), a worker is the customer's WebSocket
 * server (counting media messages, echoing them with --connect), the main thread is the switch's side.
 *
 * dropped % = frames the callers sent that the server never got, over frames sent (the stream's own dropped
 * counter is shown apart: frames it refused because the socket's send buffer was full). back % (with --connect) =
 * packets the callers got back over packets they sent. CPU = the whole process (three threads), % of one core;
 * main ELU = the main thread's event-loop utilisation.
 *
 *   npx tsx bench/media/streams.bench.ts [--steps 50,100,200,300,400] [--seconds 10] [--connect]
 */
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { UrlPolicy } from '../../kit/index.js';
import { IvrEndpoint } from '../../media/ivr-endpoint.js';
import { LegAudioPort } from '../../media/streams/audio-port.js';
import { MediaStream } from '../../media/streams/media-stream.js';
import { plainAudioSdp } from '../../media/sdp.js';
import { ask, startRtpCallers } from './rtp-callers.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}
const STEPS = arg('steps', '50,100,200,300,400').split(',').map(Number);
const SECONDS = Number(arg('seconds', '10'));
const CONNECT = process.argv.includes('--connect');

const SERVER = `
const { parentPort, workerData } = require('node:worker_threads');
const { WebSocketServer } = require('ws');
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
let media = 0;
wss.on('connection', (ws) => {
  ws.on('message', (data) => {
    const text = data.toString();
    if (!text.startsWith('{"event":"media"')) return;
    media++;
    if (workerData.echo) {
      const m = JSON.parse(text);
      ws.send(JSON.stringify({ event: 'media', streamSid: m.streamSid, media: { payload: m.media.payload } }));
    }
  });
});
wss.on('listening', () => parentPort.postMessage({ port: wss.address().port }));
parentPort.on('message', (m) => {
  if (m === 'count') parentPort.postMessage({ media });
  if (m === 'close') { for (const c of wss.clients) c.terminate(); wss.close(() => parentPort.postMessage({})); }
});
`;

async function step(n: number) {
  const server = new Worker(SERVER, { eval: true, workerData: { echo: CONNECT } });
  const { port: wsPort } = await new Promise<{ port: number }>((r) => server.once('message', r));
  const endpoints: IvrEndpoint[] = [];
  for (let i = 0; i < n; i += 1) {
    const e = new IvrEndpoint({ address: '127.0.0.1' });
    await e.open();
    endpoints.push(e);
  }
  const callers = await startRtpCallers(endpoints.map((e) => e.port));
  const callerPorts = callers.ports;
  // What rtpengine's offer would tell the endpoint: where the caller's side of the engine listens (here the caller).
  endpoints.forEach((e, i) =>
    e.sdp(plainAudioSdp({ address: '127.0.0.1', port: callerPorts[i]!, codecs: ['PCMU', 'telephone-event'] })),
  );
  const policy = new UrlPolicy({ allowPrivate: true });
  const streams = endpoints.map(
    (e, i) =>
      new MediaStream({
        url: `ws://127.0.0.1:${wsPort}/stream/${i}`,
        track: 'inbound_track',
        bidirectional: CONNECT,
        callSid: `CA${i}`,
        accountSid: 'bench',
        customParameters: { n: String(i) },
        secret: 'bench-secret',
        policy,
        port: new LegAudioPort(e),
      }),
  );
  await Promise.all(streams.map((s) => s.start()));
  const cpu0 = process.cpuUsage();
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  callers.start();
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  const { sent, received } = await callers.stop();
  const elapsed = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const elu = performance.eventLoopUtilization(elu0);
  await new Promise((r) => setTimeout(r, 500)); // what is in flight lands
  const { media } = await ask<{ media: number }>(server, 'count');
  const ownDrops = streams.reduce((sum, s) => sum + s.stats.framesDropped, 0);
  await Promise.all(streams.map((s) => s.stop()));
  for (const e of endpoints) e.close();
  await callers.close();
  await ask(server, 'close');
  await server.terminate();
  return {
    n,
    sent,
    media,
    droppedPct: (100 * Math.max(0, sent - media)) / Math.max(1, sent),
    ownDrops,
    backPct: (100 * received) / Math.max(1, sent),
    cpuPct: ((cpu.user + cpu.system) / 1000 / elapsed) * 100,
    eluPct: elu.utilization * 100,
  };
}

console.log(
  `media streams (${CONNECT ? 'bidirectional, the server echoes every frame' : 'fork, caller to server'}), ` +
    `${SECONDS} s per step, 50 frames/s per stream; load average ${(await import('node:os')).loadavg()[0]!.toFixed(1)} at start`,
);
console.log(
  'streams | frames sent | frames at server | dropped % | dropped by back-pressure | ' +
    (CONNECT ? 'back at callers % | ' : '') +
    'CPU % of a core | main ELU %',
);
for (const n of STEPS) {
  const r = await step(n);
  console.log(
    [
      r.n,
      r.sent,
      r.media,
      r.droppedPct.toFixed(3),
      r.ownDrops,
      ...(CONNECT ? [r.backPct.toFixed(1)] : []),
      r.cpuPct.toFixed(1),
      r.eluPct.toFixed(1),
    ].join(' | '),
  );
}
process.exit(0);
