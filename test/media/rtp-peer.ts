import { createSocket, type Socket } from 'node:dgram';
import {
  audioEndpoint,
  buildRtp,
  decodeG711,
  encodeG711,
  parseRtp,
  plainAudioSdp,
  type AudioCodec,
} from '../../media/index.js';
import { nextPorts } from '../support/ports.js';

/**
 * A real RTP endpoint on a UDP socket for tests and benches: sends paced G.711 (20 ms packets) and RFC 4733
 * events, and keeps what it receives. Its port and the next (RTCP) come from this run's block
 * (test/support/ports.ts), so two runs on one box never collide.
 */

export interface Received {
  payloadType: number;
  timestamp: number;
  sequence: number;
  ssrc: number;
  payload: Buffer;
  at: number;
}

export class RtpPeer {
  readonly socket: Socket;
  port = 0;
  remote: { address: string; port: number } | undefined;
  readonly received: Received[] = [];
  readonly ssrc = Math.floor(Math.random() * 0xffffffff);
  #seq = Math.floor(Math.random() * 1000);
  #ts = Math.floor(Math.random() * 100000);
  keepPayloads = true;
  count = 0;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('message', (msg) => {
      this.count += 1;
      if (!this.keepPayloads) return;
      const rtp = parseRtp(msg);
      if (rtp) this.received.push({ ...rtp, payload: Buffer.from(rtp.payload), at: Date.now() });
    });
  }

  static async open(): Promise<RtpPeer> {
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const port = nextPorts(2);
      const socket = createSocket('udp4');
      try {
        await new Promise<void>((resolve, reject) => {
          socket.once('error', reject);
          socket.bind(port, '127.0.0.1', () => resolve());
        });
        socket.on('error', () => undefined);
        const peer = new RtpPeer(socket);
        peer.port = port;
        return peer;
      } catch {
        socket.close();
      }
    }
    throw new Error("no free test RTP port in the run's block");
  }

  sdp(codecs: AudioCodec[] = ['PCMU', 'PCMA', 'telephone-event']): string {
    return plainAudioSdp({ address: '127.0.0.1', port: this.port, codecs });
  }

  /** Where to send, from the SDP rtpengine gave this peer. */
  useSdp(sdp: string): void {
    const ep = audioEndpoint(sdp);
    if (!ep) throw new Error('SDP has no audio');
    this.remote = { address: ep.address, port: ep.port };
  }

  sendFrame(samples: Int16Array, payloadType: 0 | 8 = 0): void {
    if (!this.remote) throw new Error('no remote');
    const packet = buildRtp({
      payloadType,
      sequence: this.#seq++,
      timestamp: this.#ts,
      ssrc: this.ssrc,
      payload: encodeG711(samples, payloadType),
    });
    this.#ts += samples.length;
    this.socket.send(packet, this.remote.port, this.remote.address);
  }

  /** Send audio paced in real time, 160 samples per packet. */
  async sendAudio(samples: Int16Array, payloadType: 0 | 8 = 0): Promise<void> {
    const start = Date.now();
    for (let i = 0, n = 0; i < samples.length; i += 160, n += 1) {
      const frame = new Int16Array(160);
      frame.set(samples.subarray(i, Math.min(samples.length, i + 160)));
      this.sendFrame(frame, payloadType);
      const wait = start + (n + 1) * 20 - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  }

  /** One RFC 4733 event (section 2.5): start packet with marker, updates, three end packets. */
  async sendDigit(event: number, durationMs = 100): Promise<void> {
    if (!this.remote) throw new Error('no remote');
    const ts = this.#ts;
    const steps = Math.max(1, Math.round(durationMs / 20));
    for (let i = 1; i <= steps + 2; i += 1) {
      const end = i >= steps;
      const payload = Buffer.alloc(4);
      payload[0] = event;
      payload[1] = (end ? 0x80 : 0) | 10;
      payload.writeUInt16BE(Math.min(i, steps) * 160, 2);
      const packet = buildRtp({
        payloadType: 101,
        marker: i === 1,
        sequence: this.#seq++,
        timestamp: ts,
        ssrc: this.ssrc,
        payload,
      });
      this.socket.send(packet, this.remote.port, this.remote.address);
      await new Promise((r) => setTimeout(r, 20));
    }
    this.#ts += steps * 160;
  }

  /** All received G.711 audio in arrival order, decoded. */
  decoded(): Int16Array {
    const parts = this.received
      .filter((r) => r.payloadType === 0 || r.payloadType === 8)
      .map((r) => decodeG711(r.payload, r.payloadType as 0 | 8));
    const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }

  close(): void {
    this.socket.close();
  }
}

export function tone(freq: number, seconds: number, amplitude = 8000, rate = 8000): Int16Array {
  const out = new Int16Array(Math.round(seconds * rate));
  for (let i = 0; i < out.length; i += 1) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * freq * i) / rate));
  return out;
}

/** Energy at one frequency (Goertzel), normalised per sample: tells which tone a channel carries. */
export function toneEnergy(samples: Int16Array, freq: number, rate = 8000): number {
  const k = 2 * Math.cos((2 * Math.PI * freq) / rate);
  let s1 = 0;
  let s2 = 0;
  for (const x of samples) {
    const s0 = x + k * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return Math.sqrt(s1 * s1 + s2 * s2 - k * s1 * s2) / Math.max(1, samples.length);
}

/** RMS per 20 ms frame. */
export function envelope(samples: Int16Array, frame = 160): number[] {
  const out: number[] = [];
  for (let i = 0; i + frame <= samples.length; i += frame) {
    let sum = 0;
    for (let j = i; j < i + frame; j += 1) sum += (samples[j] ?? 0) ** 2;
    out.push(Math.sqrt(sum / frame));
  }
  return out;
}

/** Best Pearson correlation of b against a over lags in [-maxLag, maxLag] frames. */
export function bestCorrelation(a: number[], b: number[], maxLag = 50): { r: number; lag: number } {
  let best = { r: -1, lag: 0 };
  for (let lag = -maxLag; lag <= maxLag; lag += 1) {
    const xs: number[] = [];
    const ys: number[] = [];
    for (let i = 0; i < a.length; i += 1) {
      const j = i + lag;
      if (j >= 0 && j < b.length) {
        xs.push(a[i] ?? 0);
        ys.push(b[j] ?? 0);
      }
    }
    if (xs.length < 10) continue;
    const mx = xs.reduce((s, v) => s + v, 0) / xs.length;
    const my = ys.reduce((s, v) => s + v, 0) / ys.length;
    let num = 0;
    let dx = 0;
    let dy = 0;
    for (let i = 0; i < xs.length; i += 1) {
      num += ((xs[i] ?? 0) - mx) * ((ys[i] ?? 0) - my);
      dx += ((xs[i] ?? 0) - mx) ** 2;
      dy += ((ys[i] ?? 0) - my) ** 2;
    }
    const r = num / Math.sqrt(dx * dy || 1);
    if (r > best.r) best = { r, lag };
  }
  return best;
}
