import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, constants, openSync, readdirSync, readlinkSync, writeSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rms } from '../g711.js';
import { dictionaryWords, hintGrammar, openGrammar, sanitiseHints } from './hints.js';

/**
 * Speech input for Gather: Debian's pocketsphinx with its US English model, no network. The
 * decoding runs in child processes (`pocketsphinx_continuous`, spawned with an argument array, never a shell),
 * so the event loop only copies audio; each is bounded in address space (prlimit) and in time, and killed when
 * the recognition ends, is aborted or its call ends.
 *
 * Three rules (the trials behind them: docs/performance.md, "Speech recognition"):
 * - Telephone audio has nothing above 4 kHz, where the 16 kHz model expects the energy of /s/ and /f/: it is
 *   upsampled by inserting zeros (the spectrum of 0-4 kHz mirrored into 4-8 kHz, a crude bandwidth extension),
 *   not with an interpolating filter, which left the hints unrecognised.
 * - pocketsphinx_continuous prints no usable confidence (posteriors are 1.0 under a grammar). The confidence here
 *   is the agreement of two decoders on the same audio: the hints alone (what the caller said, forced to the
 *   closest hint) and the hints beside everyday other words. Both give the same hint: 0.9; another hint: 0.5; an
 *   other word or nothing: 0.2.
 * - The silence before the caller speaks changes what the decoders make of the speech (their voice activity
 *   detection and live cepstral mean adapt to it), and how much of it a Gather hears depends on when it started
 *   listening, not on the caller. So the decoders get the caller's audio from LEAD_IN_MS before the first 20 ms
 *   frame at speech level: the same words are the same samples to them however long the Gather listened first.
 */
export interface SpeechModel {
  /** The acoustic model directory. */
  readonly hmm: string;
  /** The pronouncing dictionary. */
  readonly dict: string;
  /** A language model for speech without hints. */
  readonly lm: string;
}

/** Debian's pocketsphinx-en-us. */
export const EN_US_MODEL: SpeechModel = {
  hmm: '/usr/share/pocketsphinx/model/en-us/en-us',
  dict: '/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict',
  lm: '/usr/share/pocketsphinx/model/en-us/en-us.lm.bin',
};

export interface SpeechResult {
  readonly transcript: string;
  /** 0..1: how far the two decoders agree (see above). */
  readonly confidence: number;
}

export interface RecognizerOptions {
  readonly hints: readonly string[];
  /** Longest audio listened to, seconds (1..60, default 15). */
  readonly maxSeconds?: number;
  readonly model?: SpeechModel;
  /** Address-space limit of each decoder process (default 512 MiB). */
  readonly memoryBytes?: number;
  /** Called once when the audio first reaches speech level (barge-in on a prompt). */
  readonly onSpeechStart?: () => void;
}

const run = promisify(execFile);
const RATE = 16000;
/** After the end of audio, how long the decoders get for their last utterance. */
const DRAIN_MS = 3000;
/** A 20 ms frame whose RMS (full scale 32768) is above this is the caller speaking (as for Record's voice). */
const SPEECH_RMS = 600;
/** Audio from before the first frame at speech level that the decoders get too: a word's softer beginning. */
const LEAD_IN_MS = 20;
const LEAD_IN_BYTES = (LEAD_IN_MS * RATE * 2) / 1000;
/** Audio held for a decoder the FIFO cannot take yet: a minute of 16 kHz 16-bit (maxSeconds is at most 60). */
const MAX_BACKLOG_BYTES = 60 * RATE * 2;

/**
 * One `pocketsphinx_continuous` reading raw 16 kHz 16-bit audio from a FIFO we write: its first hypothesis, or
 * null. Not its stdin: Node's stdio pipes are socket pairs, and `-infile /dev/stdin` cannot open a socket (it
 * exits 1). We hold the FIFO open read-write and non-blocking, so neither our open nor a write ever blocks the
 * event loop or a libuv thread. The FIFO holds 2 s of audio; what does not fit (the decoder still loading its
 * model, which takes seconds on a busy or cold box, or behind) waits here and is written as room appears, up to
 * MAX_BACKLOG_BYTES: a caller's answer is not lost because the decoder started slowly.
 */
class Decoder {
  readonly #proc: ChildProcess;
  readonly #fifo: string;
  #fd: number | undefined;
  /** Audio the FIFO had no room for yet, oldest first. */
  readonly #backlog: Buffer[] = [];
  #backlogBytes = 0;
  #retry: NodeJS.Timeout | undefined;
  #ending = false;
  #exited = false;
  readonly first: Promise<string | null>;

  constructor(args: string[], fifo: string, memoryBytes: number) {
    this.#fifo = fifo;
    this.#fd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
    this.#proc = spawn(
      'prlimit',
      [`--as=${memoryBytes}`, '--', 'pocketsphinx_continuous', ...args, '-infile', fifo, '-logfn', '/dev/null'],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    this.first = new Promise((resolve) => {
      let text = '';
      this.#proc.stdout!.on('data', (chunk: Buffer) => {
        text = (text + chunk.toString('utf8')).slice(-4096);
        const line = text
          .split('\n')
          .slice(0, -1)
          .map((l) => l.trim())
          .find((l) => l !== '');
        if (line !== undefined) resolve(line);
      });
      this.#proc.once('exit', () => {
        this.#exited = true;
        this.#closeFifo();
        resolve(null);
      });
      this.#proc.once('error', () => resolve(null));
    });
  }

  get pid(): number | undefined {
    return this.#proc.pid;
  }

  /** Queues audio for the decoder and writes what the FIFO has room for. */
  write(pcm: Buffer): void {
    if (this.#fd === undefined) return;
    if (this.#backlogBytes + pcm.length > MAX_BACKLOG_BYTES) return; // a decoder a minute behind loses the rest
    this.#backlog.push(pcm);
    this.#backlogBytes += pcm.length;
    this.#flush();
  }

  /** Writes the backlog in pieces of at most PIPE_BUF (4096 bytes), each atomic; a full FIFO is retried shortly. */
  #flush(): void {
    while (this.#fd !== undefined && this.#backlog.length > 0) {
      const head = this.#backlog[0]!;
      let n: number;
      try {
        n = writeSync(this.#fd, head, 0, Math.min(4096, head.length));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') return this.#dropBacklog(); // the decoder is gone
        if (this.#retry === undefined) {
          this.#retry = setTimeout(() => {
            this.#retry = undefined;
            this.#flush();
          }, 20);
          this.#retry.unref();
        }
        return;
      }
      if (n >= head.length) this.#backlog.shift();
      else this.#backlog[0] = head.subarray(n);
      this.#backlogBytes -= n;
    }
  }

  #dropBacklog(): void {
    clearTimeout(this.#retry);
    this.#retry = undefined;
    this.#backlog.length = 0;
    this.#backlogBytes = 0;
  }

  /**
   * End of audio: the decoder reads EOF once our end of the FIFO is closed (we are its only writer), but only if it
   * has opened the FIFO by then: closed before that, the audio would be lost and its open would wait forever. So
   * the close waits, every 20 ms, until the decoder holds the FIFO (its /proc fd table; our own read-write end
   * makes a non-blocking open succeed whoever else reads).
   */
  end(): void {
    const fd = this.#fd;
    if (fd === undefined || this.#ending) return;
    this.#ending = true;
    const tryClose = (): void => {
      if (this.#fd === undefined) return;
      if (this.#exited || (this.#backlog.length === 0 && this.#readerHasFifo())) return this.#closeFifo();
      setTimeout(tryClose, 20).unref();
    };
    tryClose();
  }

  #readerHasFifo(): boolean {
    try {
      const dir = `/proc/${this.#proc.pid}/fd`;
      return readdirSync(dir).some((fd) => {
        try {
          return readlinkSync(`${dir}/${fd}`) === this.#fifo;
        } catch {
          return false;
        }
      });
    } catch {
      return false;
    }
  }

  #closeFifo(): void {
    if (this.#fd === undefined) return;
    closeSync(this.#fd);
    this.#fd = undefined;
  }

  kill(): void {
    this.#dropBacklog();
    this.#closeFifo();
    if (this.#proc.exitCode === null && this.#proc.signalCode === null) this.#proc.kill('SIGKILL');
  }
}

/**
 * One recognition: audio in (`push`, 8 or 16 kHz), one result out (`result`). Created with `open`; `close()` ends
 * it at any time (the result is then null if nothing was recognised yet). Safe to close twice.
 */
export class SpeechRecognizer {
  readonly result: Promise<SpeechResult | null>;
  readonly #decoders: Decoder[];
  readonly #hints: readonly string[];
  readonly #dir: string;
  readonly #maxSamples: number;
  readonly #onSpeechStart: (() => void) | undefined;
  readonly #timer: NodeJS.Timeout;
  #samples = 0;
  #spoke = false;
  /** Until the caller speaks: the last LEAD_IN_MS of their audio (16 kHz), which the decoders get with the speech. */
  #leadIn = Buffer.alloc(0);
  #ended = false;
  #closed = false;

  private constructor(dir: string, hints: readonly string[], decoders: Decoder[], o: RecognizerOptions) {
    this.#dir = dir;
    this.#hints = hints;
    this.#decoders = decoders;
    const maxSeconds = Math.min(60, Math.max(1, o.maxSeconds ?? 15));
    this.#maxSamples = maxSeconds * RATE;
    this.#onSpeechStart = o.onSpeechStart;
    // Whatever the audio does, the decoders live at most maxSeconds plus the drain.
    this.#timer = setTimeout(() => this.close(), maxSeconds * 1000 + DRAIN_MS);
    this.result = this.#decide().finally(() => this.close());
  }

  /** Starts the decoders for `hints` (sanitised; none usable: the open language model). */
  static async open(o: RecognizerOptions): Promise<SpeechRecognizer> {
    const model = o.model ?? EN_US_MODEL;
    const words = await dictionaryWords(model.dict);
    const isWord = (w: string) => words.has(w);
    const hints = sanitiseHints(o.hints, isWord);
    const dir = await mkdtemp(join(tmpdir(), 'simu-speech-'));
    const base = ['-hmm', model.hmm, '-dict', model.dict, '-samprate', String(RATE)];
    const memory = o.memoryBytes ?? 512 * 1024 * 1024;
    const searches: string[][] = [];
    if (hints.length === 0) {
      searches.push(['-lm', model.lm]);
    } else {
      await writeFile(join(dir, 'hints.gram'), hintGrammar(hints));
      await writeFile(join(dir, 'open.gram'), openGrammar(hints, isWord));
      searches.push(['-jsgf', join(dir, 'hints.gram')], ['-jsgf', join(dir, 'open.gram')]);
    }
    const decoders: Decoder[] = [];
    for (const [i, search] of searches.entries()) {
      const fifo = join(dir, `audio-${i}.fifo`);
      await run('mkfifo', ['-m', '600', fifo]);
      decoders.push(new Decoder([...base, ...search], fifo, memory));
    }
    return new SpeechRecognizer(dir, hints, decoders, o);
  }

  /** The decoder processes' ids (tests check they are gone after close). */
  get pids(): number[] {
    return this.#decoders.map((d) => d.pid).filter((p): p is number => p !== undefined);
  }

  /**
   * Audio of the caller, 16-bit mono at 8 or 16 kHz; past maxSeconds it ends the audio. The decoders get it from
   * LEAD_IN_MS before the first 20 ms frame at speech level on (see above): the silence before is only counted.
   */
  push(samples: Int16Array, rate: 8000 | 16000): void {
    if (this.#ended) return;
    const pcm = rate === 8000 ? foldUp(samples) : Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
    this.#samples += pcm.length / 2;
    if (this.#spoke) {
      for (const d of this.#decoders) d.write(pcm);
    } else {
      const onset = speechOnset(samples, rate);
      const held = Buffer.concat([this.#leadIn, pcm]);
      if (onset === undefined) {
        this.#leadIn = held.subarray(Math.max(0, held.length - LEAD_IN_BYTES));
      } else {
        this.#spoke = true;
        this.#leadIn = Buffer.alloc(0);
        this.#onSpeechStart?.();
        const from = held.length - pcm.length + onset * (RATE / rate) * 2 - LEAD_IN_BYTES;
        const speech = held.subarray(Math.max(0, from));
        for (const d of this.#decoders) d.write(speech);
      }
    }
    if (this.#samples >= this.#maxSamples) this.end();
  }

  /** No more audio: the decoders finish their last utterance (bounded by the drain time). */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const d of this.#decoders) d.end();
  }

  /** Kills the decoders and removes the grammar files. Safe twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#ended = true;
    clearTimeout(this.#timer);
    for (const d of this.#decoders) d.kill();
    void rm(this.#dir, { recursive: true, force: true });
  }

  async #decide(): Promise<SpeechResult | null> {
    const [forced, open] = this.#decoders;
    const heard = await forced!.first;
    if (heard === null) return null;
    if (!open) return { transcript: heard, confidence: 0.5 };
    // The answer is in: no more audio. The second decoder has been given all the first one heard, and cuts it into
    // the same utterances (voice activity is found before either grammar is searched), so once its audio ends it
    // answers for the same words however far behind the scheduler left it; a wall-clock wait for it made the
    // confidence depend on the box's load. DRAIN_MS, as for any decoder's last utterance, bounds a stuck one.
    this.end();
    let timer: NodeJS.Timeout | undefined;
    const other = await Promise.race([
      open.first,
      new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), DRAIN_MS))),
    ]);
    clearTimeout(timer);
    const confidence = other === heard ? 0.9 : other !== null && this.#hints.includes(other) ? 0.5 : 0.2;
    return { transcript: heard, confidence };
  }
}

/** The first sample of the first 20 ms frame of `samples` at speech level, or undefined. */
export function speechOnset(samples: Int16Array, rate: 8000 | 16000): number | undefined {
  const frame = rate / 50;
  for (let i = 0; i < samples.length; i += frame) {
    if (rms(samples, i, Math.min(samples.length, i + frame)) > SPEECH_RMS) return i;
  }
  return undefined;
}

/**
 * 8 kHz to 16 kHz by inserting a zero after each sample, with no interpolating filter: the 0-4 kHz spectrum is
 * mirrored into 4-8 kHz, which gives the 16 kHz model energy where it expects fricatives (see above).
 */
export function foldUp(samples: Int16Array): Buffer {
  const out = Buffer.alloc(samples.length * 4);
  for (let i = 0; i < samples.length; i += 1) out.writeInt16LE(samples[i]!, i * 4);
  return out;
}
