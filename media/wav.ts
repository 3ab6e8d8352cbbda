import { open, readFile, writeFile } from 'node:fs/promises';
import { MediaError } from './errors.js';

/** 16-bit PCM WAV (RIFF) files: what espeak-ng/sox produce for us and what our recordings are written as. */
export interface PcmAudio {
  sampleRate: number;
  channels: number;
  /** Interleaved when channels > 1. */
  samples: Int16Array;
}

export function encodeWav(audio: PcmAudio): Buffer {
  const dataBytes = audio.samples.length * 2;
  const b = Buffer.alloc(44 + dataBytes);
  b.write('RIFF', 0, 'ascii');
  b.writeUInt32LE(36 + dataBytes, 4);
  b.write('WAVE', 8, 'ascii');
  b.write('fmt ', 12, 'ascii');
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20); // PCM
  b.writeUInt16LE(audio.channels, 22);
  b.writeUInt32LE(audio.sampleRate, 24);
  b.writeUInt32LE(audio.sampleRate * audio.channels * 2, 28);
  b.writeUInt16LE(audio.channels * 2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36, 'ascii');
  b.writeUInt32LE(dataBytes, 40);
  for (let i = 0; i < audio.samples.length; i += 1) b.writeInt16LE(audio.samples[i] ?? 0, 44 + i * 2);
  return b;
}

export function decodeWav(b: Buffer): PcmAudio {
  if (b.toString('ascii', 0, 4) !== 'RIFF' || b.toString('ascii', 8, 12) !== 'WAVE') {
    throw new MediaError('MEDIA_DECODE_FAILED', 'not a RIFF/WAVE file');
  }
  let pos = 12;
  let sampleRate = 0;
  let channels = 0;
  let bits = 0;
  while (pos + 8 <= b.length) {
    const id = b.toString('ascii', pos, pos + 4);
    let size = b.readUInt32LE(pos + 4);
    const body = pos + 8;
    if (id === 'fmt ') {
      if (b.readUInt16LE(body) !== 1) throw new MediaError('MEDIA_DECODE_FAILED', 'WAV is not linear PCM');
      channels = b.readUInt16LE(body + 2);
      sampleRate = b.readUInt32LE(body + 4);
      bits = b.readUInt16LE(body + 14);
    } else if (id === 'data') {
      if (bits !== 16) throw new MediaError('MEDIA_DECODE_FAILED', `WAV has ${bits}-bit samples, want 16`);
      // Streamed writers (espeak-ng to a pipe) leave the size as 0xffffffff: take the rest of the file.
      if (size === 0xffffffff || body + size > b.length) size = b.length - body;
      const samples = new Int16Array(Math.floor(size / 2));
      for (let i = 0; i < samples.length; i += 1) samples[i] = b.readInt16LE(body + i * 2);
      return { sampleRate, channels, samples };
    }
    pos = body + size + (size & 1);
  }
  throw new MediaError('MEDIA_DECODE_FAILED', 'WAV has no data chunk');
}

/** What a WAV's header says, read without touching its samples. */
export interface WavHeader {
  format: number; // 1 = linear PCM
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
  byteRate: number;
  dataOffset: number;
  dataBytes: number;
  seconds: number;
}

/** Chunks walked before `data` (fmt, LIST, fact, ...): a header that needs more is not one we wrote. */
const MAX_HEADER_CHUNKS = 32;

/**
 * The header of a RIFF/WAVE file, from a few positioned reads: the duration is the data chunk's size over the byte
 * rate, so a long file costs the same as a short one and no sample is decoded on the event loop. A data size of
 * 0xffffffff (a streamed writer) or one past the end of the file is taken as "to the end of the file".
 */
export async function readWavHeader(path: string): Promise<WavHeader> {
  const fh = await open(path, 'r');
  try {
    const fileBytes = (await fh.stat()).size;
    const at = async (pos: number, len: number): Promise<Buffer> => {
      const b = Buffer.alloc(len);
      const { bytesRead } = await fh.read(b, 0, len, pos);
      return b.subarray(0, bytesRead);
    };
    const riff = await at(0, 12);
    if (riff.length < 12 || riff.toString('ascii', 0, 4) !== 'RIFF' || riff.toString('ascii', 8, 12) !== 'WAVE')
      throw new MediaError('MEDIA_DECODE_FAILED', 'not a RIFF/WAVE file');
    let fmt: Buffer | undefined;
    let pos = 12;
    for (let i = 0; i < MAX_HEADER_CHUNKS && pos + 8 <= fileBytes; i += 1) {
      const head = await at(pos, 8);
      const id = head.toString('ascii', 0, 4);
      const size = head.readUInt32LE(4);
      if (id === 'fmt ') {
        fmt = await at(pos + 8, 16);
        if (fmt.length < 16) break;
      } else if (id === 'data') {
        if (!fmt) throw new MediaError('MEDIA_DECODE_FAILED', 'WAV data chunk comes before its fmt chunk');
        const dataOffset = pos + 8;
        const dataBytes = size === 0xffffffff || dataOffset + size > fileBytes ? fileBytes - dataOffset : size;
        const byteRate = fmt.readUInt32LE(8);
        return {
          format: fmt.readUInt16LE(0),
          channels: fmt.readUInt16LE(2),
          sampleRate: fmt.readUInt32LE(4),
          byteRate,
          bitsPerSample: fmt.readUInt16LE(14),
          dataOffset,
          dataBytes,
          seconds: byteRate > 0 ? dataBytes / byteRate : 0,
        };
      }
      pos += 8 + size + (size & 1);
    }
    throw new MediaError('MEDIA_DECODE_FAILED', 'WAV has no readable fmt and data chunks');
  } finally {
    await fh.close();
  }
}

export async function readWav(path: string): Promise<PcmAudio> {
  return decodeWav(await readFile(path));
}

export async function writeWav(path: string, audio: PcmAudio): Promise<{ sizeBytes: number; durationSec: number }> {
  const bytes = encodeWav(audio);
  await writeFile(path, bytes);
  return { sizeBytes: bytes.length, durationSec: audio.samples.length / audio.channels / audio.sampleRate };
}
