import { randomInt } from 'node:crypto';
import { decodeTable, encodeTableFor, type G711PayloadType } from '../g711.js';
import { SampleRing } from './sample-ring.js';

/** 20 ms at 8 kHz: one RTP packet of G.711 (RFC 3551 section 4.5.14). */
export const MIX_FRAME = 160;
const RTP_HEADER = 12;
/** Packet buffers a participant rotates through: a buffer is written again only after 3 more ticks (60 ms). */
const PACKET_POOL = 4;

export interface MixerParticipantOptions {
  /**
   * Sends one frame towards the participant; must not keep the buffer. With `framing: 'rtp'` (the default) a
   * whole RTP packet the mixer numbered itself; with 'payload' the 160 G.711 bytes alone, for a port that puts
   * its own RTP header on (media/streams/audio-port.ts, so the leg keeps one RTP stream whoever feeds it).
   */
  send: (frame: Buffer) => unknown;
  framing?: 'rtp' | 'payload';
  /** What the participant is sent: 0 = PCMU (default), 8 = PCMA. */
  payloadType?: G711PayloadType;
}

/**
 * One voice in a conference: its jitter ring (sample-ring.ts), the frame taken from it this tick, and the RTP
 * state of what it is sent. Everything it needs per tick is allocated here, once.
 */
export class MixerParticipant {
  readonly id: string;
  /** Not heard by the others (still hears them). */
  muted = false;
  /** Neither heard nor sent anything (the hold audio comes from elsewhere). */
  held = false;
  readonly ring = new SampleRing();
  readonly frame = new Int16Array(MIX_FRAME);
  /** Whether `frame` holds audio this tick that went into the sum. */
  contributed = false;
  framesSent = 0;
  readonly #send: (packet: Buffer) => unknown;
  readonly #pt: G711PayloadType;
  readonly #encode: Uint8Array;
  readonly #packets: Buffer[] = [];
  /** What `send` is given of each pooled packet: the packet, or a view of its payload. */
  readonly #frames: Buffer[] = [];
  #next = 0;
  #seq = randomInt(0x10000);
  #ts = randomInt(0x7fffffff);
  #marker = true;

  constructor(id: string, opts: MixerParticipantOptions) {
    this.id = id;
    this.#send = opts.send;
    this.#pt = opts.payloadType ?? 0;
    this.#encode = encodeTableFor(this.#pt);
    const ssrc = randomInt(0x7fffffff);
    for (let i = 0; i < PACKET_POOL; i += 1) {
      const p = Buffer.alloc(RTP_HEADER + MIX_FRAME);
      p[0] = 0x80;
      p.writeUInt32BE(ssrc, 8);
      this.#packets.push(p);
      this.#frames.push(opts.framing === 'payload' ? p.subarray(RTP_HEADER) : p);
    }
  }

  /** Audio from the participant: a G.711 payload as it came off the wire. */
  hear(payload: Uint8Array, payloadType: G711PayloadType): void {
    this.ring.writeEncoded(payload, decodeTable(payloadType));
  }

  /** Encodes `sum` minus this participant's own frame (N-1), clipped to 16 bits, and sends it as one packet. */
  sendMix(sum: Int32Array): void {
    const p = this.#packets[this.#next]!;
    const frame = this.#frames[this.#next]!;
    this.#next = (this.#next + 1) % PACKET_POOL;
    p[1] = (this.#marker ? 0x80 : 0) | this.#pt;
    this.#marker = false;
    p.writeUInt16BE(this.#seq, 2);
    p.writeUInt32BE(this.#ts, 4);
    this.#seq = (this.#seq + 1) & 0xffff;
    this.#ts = (this.#ts + MIX_FRAME) >>> 0;
    const enc = this.#encode;
    const own = this.frame;
    const mine = this.contributed;
    for (let i = 0; i < MIX_FRAME; i += 1) {
      let v = mine ? sum[i]! - own[i]! : sum[i]!;
      if (v > 32767) v = 32767;
      else if (v < -32768) v = -32768;
      p[RTP_HEADER + i] = enc[v & 0xffff]!;
    }
    this.framesSent += 1;
    this.#send(frame);
  }
}

/**
 * The N-1 mix of one conference, one 20 ms frame per `tick()`: each participant's next frame is taken from its
 * ring, the frames of everyone who may be heard (not muted, not held) are summed once in 32 bits, and each
 * participant is sent the sum minus its own frame, so it hears everybody but itself. Linear PCM, clipped to
 * 16 bits on the way out. A tick allocates nothing: 50 ticks a second per conference must not feed the collector.
 *
 * `announce` lays a clip (the join/leave beep) over what everybody hears; `onMix` sees the whole mix of each
 * tick (all voices, the conference recording).
 */
export class ConferenceMixer {
  readonly #participants = new Map<string, MixerParticipant>();
  #list: MixerParticipant[] = [];
  readonly #sum = new Int32Array(MIX_FRAME);
  readonly #mix = new Int16Array(MIX_FRAME);
  #clip: Int16Array | undefined;
  #clipAt = 0;
  /** The whole mix of each tick (recording); the array is reused, copy what you keep. */
  onMix: ((mix: Int16Array) => void) | undefined;
  ticks = 0;

  get size(): number {
    return this.#list.length;
  }

  participant(id: string): MixerParticipant | undefined {
    return this.#participants.get(id);
  }

  participants(): readonly MixerParticipant[] {
    return this.#list;
  }

  add(id: string, opts: MixerParticipantOptions): MixerParticipant {
    this.remove(id);
    const p = new MixerParticipant(id, opts);
    this.#participants.set(id, p);
    this.#list = [...this.#participants.values()];
    return p;
  }

  remove(id: string): boolean {
    const removed = this.#participants.delete(id);
    if (removed) this.#list = [...this.#participants.values()];
    return removed;
  }

  /** Lays `samples` (8 kHz) over what every participant hears, from the next tick. */
  announce(samples: Int16Array): void {
    this.#clip = samples;
    this.#clipAt = 0;
  }

  tick(): void {
    this.ticks += 1;
    const sum = this.#sum;
    sum.fill(0);
    const list = this.#list;
    for (let k = 0; k < list.length; k += 1) {
      const p = list[k]!;
      const got = p.ring.readFrame(p.frame);
      p.contributed = got && !p.muted && !p.held;
      if (!p.contributed) continue;
      const f = p.frame;
      for (let i = 0; i < MIX_FRAME; i += 1) sum[i] = sum[i]! + f[i]!;
    }
    this.#layClip(sum);
    if (this.onMix) {
      const mix = this.#mix;
      for (let i = 0; i < MIX_FRAME; i += 1) {
        const v = sum[i]!;
        mix[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
      }
      this.onMix(mix);
    }
    for (let k = 0; k < list.length; k += 1) {
      const p = list[k]!;
      if (!p.held) p.sendMix(sum);
    }
  }

  #layClip(sum: Int32Array): void {
    const clip = this.#clip;
    if (!clip) return;
    const at = this.#clipAt;
    const n = Math.min(MIX_FRAME, clip.length - at);
    for (let i = 0; i < n; i += 1) sum[i] = sum[i]! + clip[at + i]!;
    this.#clipAt = at + n;
    if (this.#clipAt >= clip.length) this.#clip = undefined;
  }
}
