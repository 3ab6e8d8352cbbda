import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeG711 } from './g711.js';
import { MediaError } from './errors.js';
import type { RecordingResult } from './ivr-endpoint.js';
import { readPcapUdp } from './pcap-reader.js';
import { parseRtp } from './rtp-packet.js';
import { writeWav } from './wav.js';

/**
 * RecordSession: both directions of a bridged call as a two-channel WAV (left = first leg, right = second).
 * rtpengine writes the pcap (`start recording`), holding every packet as it arrived from each peer; we split
 * them by rtpengine's local port (one per leg), decode G.711 and lay each packet at its place in time: the
 * capture time of a stream's first packet, then RTP timestamps, so jitter does not stretch the recording.
 * Only PCMU/PCMA are decoded (what PSTN legs speak); other payloads leave silence in their channel.
 */
const RATE = 8000;

export async function findCallPcaps(recordingDir: string, callId: string): Promise<string[]> {
  const dir = join(recordingDir, 'pcaps');
  const names = await readdir(dir).catch(() => [] as string[]);
  return names.filter((n) => n.startsWith(`${callId}-`) && n.endsWith('.pcap')).map((n) => join(dir, n));
}

export async function pcapToStereoWav(opts: {
  pcapPaths: string[];
  /** rtpengine's local port of each leg: [left, right]. */
  legPorts: [number, number];
  path: string;
}): Promise<RecordingResult> {
  const packets = [];
  for (const p of opts.pcapPaths) packets.push(...readPcapUdp(await readFile(p)));
  if (packets.length === 0) throw new MediaError('MEDIA_RECORDING_FAILED', 'the recording holds no packets');
  packets.sort((a, b) => a.time - b.time);
  const t0 = packets[0]?.time ?? 0;
  const channels: Array<Array<{ at: number; samples: Int16Array }>> = [[], []];
  const streams = new Map<string, { firstTime: number; firstTs: number }>();
  let length = 0;
  for (const pkt of packets) {
    const channel = opts.legPorts.indexOf(pkt.dstPort);
    if (channel < 0) continue;
    const rtp = parseRtp(pkt.payload);
    if (!rtp || (rtp.payloadType !== 0 && rtp.payloadType !== 8)) continue;
    const key = `${channel}:${rtp.ssrc}`;
    let stream = streams.get(key);
    if (!stream) {
      stream = { firstTime: pkt.time, firstTs: rtp.timestamp };
      streams.set(key, stream);
    }
    const offset = ((rtp.timestamp - stream.firstTs) >>> 0) & 0x7fffffff;
    const at = Math.round((stream.firstTime - t0) * RATE) + offset;
    const samples = decodeG711(rtp.payload, rtp.payloadType);
    channels[channel]?.push({ at, samples });
    length = Math.max(length, at + samples.length);
  }
  const interleaved = new Int16Array(length * 2);
  channels.forEach((chunks, ch) => {
    for (const { at, samples } of chunks) {
      for (let i = 0; i < samples.length; i += 1) interleaved[(at + i) * 2 + ch] = samples[i] ?? 0;
    }
  });
  const { sizeBytes, durationSec } = await writeWav(opts.path, { sampleRate: RATE, channels: 2, samples: interleaved });
  return { path: opts.path, sizeBytes, durationSec, reason: 'stopped' };
}
