/**
 * How long rtpengine 10.5 takes to answer `play media` (it opens and probes the file first), alone and under
 * concurrency: the start latency of prompts on IVR legs.   npx tsx bench/media/play-start-probe.ts
 */
import { MediaEngines, MediaService } from '../../media/index.js';
import { newSupervisor, quietLogger, tempDir } from '../../test/media/helpers.js';
import { RtpPeer } from '../../test/media/rtp-peer.js';
import { extraBlock } from '../../test/support/ports.js';

const data = tempDir('probe');
// ng from this process's test port block (test/support/ports.ts), rtpengine's RTP ports a whole extra block (100
// IVR calls need more than the 400 newSupervisor takes by default): no fixed numbers in the ephemeral range.
const rtp = extraBlock();
const supervisor = await newSupervisor(data.dir, { portMin: rtp.first, portMax: rtp.last });
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
