import { open, rename, rm, stat } from 'node:fs/promises';
import { MediaError } from './errors.js';
import { runTool } from './run-tool.js';
import { readWavHeader } from './wav.js';

/**
 * Outside audio (asset uploads, audio fetched for Play) turned, once, into the engine's playback format: 8 kHz,
 * mono, 16-bit signed PCM WAV. The format is recognised from the file's own bytes (magic numbers), never from a
 * URL, a file name or a Content-Type, and sox is told it with `-t`, so a file is decoded only by the reader meant
 * for it. What sox must never see: a name ending in .m3u or .pls (sox reads those as playlists whatever `-t`
 * says, fetching `http:` entries through `wget` run by /bin/sh and opening absolute paths), a name that is a URL,
 * or a glob pattern; callers name the source file themselves, and `--no-glob` keeps sox from expanding it.
 */

/**
 * The longest playback audio we keep: 10 minutes (4.8 MB at 8 kHz). sox stops decoding there (`trim`), so a
 * small file that decodes to hours of audio (a decompression bomb) costs a bounded amount of time and disk.
 */
export const MAX_PLAYBACK_SECONDS = 600;
export type AudioFormat = 'wav' | 'ogg' | 'flac' | 'mp3' | 'aiff' | 'au';

/** First bytes of each format (RIFF/WAVE; Ogg page; fLaC; ID3 tag or an MPEG audio frame sync; FORM/AIFF; .snd). */
export function sniffAudioFormat(head: Buffer): AudioFormat | undefined {
  const ascii = (a: number, b: number) => head.toString('latin1', a, b);
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WAVE') return 'wav';
  if (ascii(0, 4) === 'OggS') return 'ogg';
  if (ascii(0, 4) === 'fLaC') return 'flac';
  if (ascii(0, 4) === 'FORM' && /^AIF[FC]$/.test(ascii(8, 12))) return 'aiff';
  if (ascii(0, 4) === '.snd') return 'au';
  if (ascii(0, 3) === 'ID3') return 'mp3';
  // MPEG-1/2 layer III frame header: 11 sync bits, then a layer field of 01 (ISO/IEC 11172-3 §2.4.2.3).
  if (head.length >= 2 && head[0] === 0xff && (head[1] & 0xe0) === 0xe0 && (head[1] & 0x06) === 0x02) return 'mp3';
  return undefined;
}

let soxFormats: Promise<Set<string>> | undefined;

/** The formats this machine's sox reads (`sox -h` lists them); Debian's sox reads MP3 only with libsox-fmt-mp3. */
export function soxReadableFormats(): Promise<Set<string>> {
  soxFormats ??= runTool('sox', ['-h'], { timeoutMs: 10_000 })
    .catch((e: Error) => Buffer.from(e.message))
    .then((out) => {
      const line = /AUDIO FILE FORMATS:(.*)/.exec(out.toString())?.[1] ?? '';
      return new Set(line.trim().split(/\s+/));
    });
  return soxFormats;
}

export class AudioImportError extends MediaError {
  constructor(
    readonly reason: 'unsupported' | 'undecodable' | 'empty',
    message: string,
    cause?: unknown,
  ) {
    super('MEDIA_DECODE_FAILED', message, cause);
    this.name = 'AudioImportError';
  }
}

export interface ImportedAudio {
  format: AudioFormat;
  durationSeconds: number;
  sizeBytes: number;
}

/**
 * Converts `src` to an 8 kHz mono 16-bit WAV at `dest`, cut at MAX_PLAYBACK_SECONDS. Throws AudioImportError:
 * `unsupported` for a format we do not recognise or this sox cannot read, `undecodable` when sox fails on it,
 * `empty` when it holds no audio. `src` must be a path the caller chose (see the note at the top of this file).
 */
export async function convertToPlaybackWav(src: string, dest: string): Promise<ImportedAudio> {
  if (/\.(m3u|pls)$/i.test(src) || /^[a-z][a-z0-9+.-]*:/i.test(src))
    throw new AudioImportError('unsupported', 'refusing a source file name that sox would not read as plain audio');
  const fh = await open(src, 'r');
  const head = Buffer.alloc(16);
  try {
    await fh.read(head, 0, 16, 0);
  } finally {
    await fh.close();
  }
  const format = sniffAudioFormat(head);
  if (!format) throw new AudioImportError('unsupported', 'the audio is not WAV, Ogg, FLAC, MP3, AIFF or AU');
  const readable = await soxReadableFormats();
  if (!readable.has(format === 'ogg' ? 'vorbis' : format) && !readable.has(format))
    throw new AudioImportError('unsupported', `this server's sox cannot read ${format.toUpperCase()}`);
  const tmp = `${dest}.${process.pid}.tmp.wav`;
  try {
    // sox [global] [input options] input [output options] output [effects]: `-t` on both sides, no globbing.
    await runTool(
      'sox',
      [
        ...['--no-glob', '-t', format, src],
        ...['--no-glob', '-t', 'wav', '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', tmp],
        ...['trim', '0', String(MAX_PLAYBACK_SECONDS)],
      ],
      { timeoutMs: 60_000 },
    );
  } catch (e) {
    await rm(tmp, { force: true });
    throw new AudioImportError('undecodable', `sox could not decode the ${format.toUpperCase()} audio`, e);
  }
  const header = await readWavHeader(tmp).catch(() => undefined);
  if (!header || header.dataBytes === 0) {
    await rm(tmp, { force: true });
    throw new AudioImportError('empty', 'the audio holds no samples');
  }
  await rename(tmp, dest);
  return {
    format,
    durationSeconds: Math.round(header.seconds * 1000) / 1000,
    sizeBytes: (await stat(dest)).size,
  };
}
