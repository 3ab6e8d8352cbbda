/**
 * How long rtpengine 10.5 takes to answer `play media` (it opens and probes the file first), alone and under
 * concurrency: the start latency of prompts on IVR legs.   npx tsx bench/media/play-start-probe.ts
 */
import { MediaEngines, MediaService } from '../../media/index.js';
import { newSupervisor, quietLogger, tempDir } from '../../test/media/helpers.js';
import { RtpPeer } from '../../test/media/rtp-peer.js';

const data = tempDir('probe');
const supervisor = await newSupervisor(data.dir, { ngPort: 22351, portMin: 43000, portMax: 44999 });
await supervisor.start();
const media = new MediaService({
  engines: new MediaEngines({ urls: [], local: supervisor }),
  dataDir: data.dir,
  logger: quietLogger,
});
try {
  const prompt = await media.tts.synthesize({ text: 'Thank you for calling. Please hold.' });
  const peer = await RtpPeer.open();
  peer.keepPayloads = false;
  const ids: string[] = [];
  for (let i = 0; i < 100; i += 1) {
    const id = `probe-${i}`;
    await media.answerIvr(id, 'A', peer.sdp(['PCMU']));
    ids.push(id);
  }
  const client = supervisor.client;
  for (const parallel of [1, 4, 16]) {
    const t0 = Date.now();
    let next = 0;
    const lat: number[] = [];
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (next < ids.length) {
          const id = ids[next++] ?? '';
          const t = Date.now();
          await client.playMedia({ 'call-id': id, 'from-tag': 'A', file: prompt.path });
          lat.push(Date.now() - t);
          await client.stopMedia({ 'call-id': id, 'from-tag': 'A' });
        }
      }),
    );
    lat.sort((a, b) => a - b);
    const secs = (Date.now() - t0) / 1000;
    console.log(
      `parallel ${parallel}: ${(ids.length / secs).toFixed(0)} starts/s, latency p50 ${lat[50]} ms p95 ${lat[95]} ms`,
    );
  }
  peer.close();
} finally {
  await media.close();
  await supervisor.stop();
  data.remove();
}
