import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeG711 } from './g711.js';
import { MediaError } from './errors.js';
import type { RecordingResult } from './ivr-endpoint.js';
import { readPcapUdp } from './pcap-reader.js';
import { parseRtp } from './rtp-packet.js';
import { readWav, writeWav } from './wav.js';

/**
 * RecordSession: both directions of a bridged call as a two-channel WAV (left = first leg, right = second).
 * rtpengine writes the pcap (`start recording`), holding every packet as it arrived from each peer; we split
 * them by rtpengine's local port (one per leg), decode G.711 and lay each packet at its place in time: the
 * capture time of a stream's first packet, then RTP timestamps, so jitter does not stretch the recording.
 * Only PCMU/PCMA are decoded (what PSTN legs speak); other payloads leave silence in their channel. Prompts the
 * engine injected (`play media`) are not in the pcap: the caller of a call the platform answered heard them, so
 * they are laid into the far side's channel from our own log of what was played when.
 */
const RATE = 8000;

export async function findCallPcaps(recordingDir: string, callId: string): Promise<string[]> {
  const dir = join(recordingDir, 'pcaps');
  const names = await readdir(dir).catch(() => [] as string[]);
  return names.filter((n) => n.startsWith(`${callId}-`) && n.endsWith('.pcap')).map((n) => join(dir, n));
}

/** A prompt the platform played into the call (rtpengine injects it, so it is not in the pcap). */
export interface RecordedPrompt {
  /** Epoch ms when the engine started playing it. */
  startedAtMs: number;
  /** Epoch ms when it stopped early (barge-in, next verb), if it did. */
  stoppedAtMs?: number;
  /** An 8 kHz 16-bit WAV, as our TTS, fetcher and asset import write them. */
  path: string;
}

export async function pcapToStereoWav(opts: {
  pcapPaths: string[];
  /**
   * Which channel a packet sent to this rtpengine port belongs to: [left, right] ports of two legs, or a function
   * (a call the platform answered: the caller's port is left, every other port the far side).
   */
  legPorts: [number, number] | ((dstPort: number) => number);
  path: string;
  /** Prompts played to the left leg, laid into the right channel (what the caller heard from us). */
  prompts?: RecordedPrompt[];
  /** Keep at most this many seconds from the start. */
  maxLengthSec?: number;
  /** Mix both directions into one channel. */
  mono?: boolean;
  /** Epoch ms the recording started: the WAV begins there (else at the first packet). */
  startedAtMs?: number;
}): Promise<RecordingResult> {
  const packets = [];
  for (const p of opts.pcapPaths) packets.push(...readPcapUdp(await readFile(p)));
  if (packets.length === 0 && !opts.prompts?.length) {
    throw new MediaError('MEDIA_RECORDING_FAILED', 'the recording holds no packets and no prompts');
  }
  packets.sort((a, b) => a.time - b.time);
  const t0 = opts.startedAtMs !== undefined ? opts.startedAtMs / 1000 : (packets[0]?.time ?? 0);
  const legPorts = opts.legPorts;
  const channelOf = typeof legPorts === 'function' ? legPorts : (port: number) => legPorts.indexOf(port);
  const channels: Array<Array<{ at: number; samples: Int16Array }>> = [[], []];
  const streams = new Map<string, { firstTime: number; firstTs: number }>();
  let length = 0;
  for (const pkt of packets) {
    const channel = channelOf(pkt.dstPort);
    if (channel < 0) continue;
    const rtp = parseRtp(pkt.payload);
    if (!rtp || (rtp.payloadType !== 0 && rtp.payloadType !== 8)) continue;
    const key = `${channel}:${pkt.dstPort}:${rtp.ssrc}`;
    let stream = streams.get(key);
    if (!stream) {
      stream = { firstTime: pkt.time, firstTs: rtp.timestamp };
      streams.set(key, stream);
    }
    const offset = ((rtp.timestamp - stream.firstTs) >>> 0) & 0x7fffffff;
    const at = Math.max(0, Math.round((stream.firstTime - t0) * RATE)) + offset;
    const samples = decodeG711(rtp.payload, rtp.payloadType);
    channels[channel]?.push({ at, samples });
    length = Math.max(length, at + samples.length);
  }
  for (const prompt of opts.prompts ?? []) {
    const audio = await readWav(prompt.path).catch(() => undefined);
    if (!audio || audio.sampleRate !== RATE || audio.channels !== 1) continue; // not one of ours: left out
    const at = Math.max(0, Math.round((prompt.startedAtMs / 1000 - t0) * RATE));
    const played =
      prompt.stoppedAtMs === undefined ? Infinity : ((prompt.stoppedAtMs - prompt.startedAtMs) * RATE) / 1000;
    const samples = audio.samples.subarray(0, Math.max(0, Math.min(audio.samples.length, Math.round(played))));
    channels[1]?.push({ at, samples });
    length = Math.max(length, at + samples.length);
  }
  if (opts.maxLengthSec !== undefined) length = Math.min(length, Math.round(opts.maxLengthSec * RATE));
  const width = opts.mono ? 1 : 2;
  const out = new Int16Array(length * width);
  channels.forEach((chunks, ch) => {
    for (const { at, samples } of chunks) {
      for (let i = 0; i < samples.length && at + i < length; i += 1) {
        const j = (at + i) * width + (opts.mono ? 0 : ch);
        // Sums, clipped: a prompt over the IVR endpoint's silence, or both sides of a mono mix.
        out[j] = Math.max(-32768, Math.min(32767, (out[j] ?? 0) + (samples[i] ?? 0)));
      }
    }
  });
  const { sizeBytes, durationSec } = await writeWav(opts.path, { sampleRate: RATE, channels: width, samples: out });
  return { path: opts.path, sizeBytes, durationSec, reason: 'stopped' };
}
