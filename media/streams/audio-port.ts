import { randomInt } from 'node:crypto';
import { buildRtp } from '../rtp-packet.js';

/** 20 ms of 8 kHz G.711: what one RTP packet of the caller's leg carries, and what we send back per packet. */
export const FRAME_BYTES = 160;
/** 20 ms of mu-law silence (0xFF is mu-law's zero). Shared: never written to. */
export const SILENCE_FRAME: Buffer = Buffer.alloc(FRAME_BYTES, 0xff);

/** What an audio port needs of the platform's end of a leg (media/ivr-endpoint.ts). */
export interface LegEndpoint {
  /** Each PCMU payload the caller sends, as it arrives; the returned function stops it. */
  tapPayload(onPayload: (pcmu: Buffer) => void): () => void;
  /** One RTP packet from our end towards the caller (false: the endpoint is closed or not anchored). */
  send(packet: Buffer): boolean;
}

/**
 * The caller's audio both ways at the platform's end of a leg, as 20 ms PCMU frames: what queues (a bridge of two
 * waiting legs) and media streams (a customer's WebSocket) read and write. Audio sent here goes from our IVR socket
 * to rtpengine, which relays it to the caller (transcoding when the caller speaks another codec), under one SSRC
 * of ours with our own sequence numbers and timestamps, whoever produced the frames.
 *
 * Frames sent are also handed to `onSent` listeners: a media stream's outbound track is what the caller is sent.
 */
export class LegAudioPort {
  readonly #endpoint: LegEndpoint;
  readonly #ssrc = randomInt(0, 2 ** 32);
  #sequence = randomInt(0, 2 ** 16);
  #timestamp = randomInt(0, 2 ** 32);
  readonly #sentTaps = new Set<(pcmu: Buffer) => void>();
  #marker = true;

  constructor(endpoint: LegEndpoint) {
    this.#endpoint = endpoint;
  }

  /** The caller's PCMU frames as they arrive; the returned function stops it. */
  onReceived(fn: (pcmu: Buffer) => void): () => void {
    return this.#endpoint.tapPayload(fn);
  }

  /** The frames this port sends to the caller; the returned function stops it. */
  onSent(fn: (pcmu: Buffer) => void): () => void {
    this.#sentTaps.add(fn);
    return () => void this.#sentTaps.delete(fn);
  }

  /** Sends one frame (any length up to 1,000 bytes of PCMU) to the caller; false when the leg is gone. */
  send(pcmu: Buffer): boolean {
    const packet = buildRtp({
      payloadType: 0,
      marker: this.#marker,
      sequence: this.#sequence,
      timestamp: this.#timestamp,
      ssrc: this.#ssrc,
      payload: pcmu,
    });
    this.#marker = false;
    this.#sequence = (this.#sequence + 1) & 0xffff;
    this.#timestamp = (this.#timestamp + pcmu.length) >>> 0;
    const sent = this.#endpoint.send(packet);
    if (sent) for (const tap of this.#sentTaps) tap(pcmu);
    return sent;
  }

  /** After a gap in what we send (talk spurt), RTP's marker bit tells the far end's jitter buffer (RFC 3551 4.1). */
  markTalkspurt(): void {
    this.#marker = true;
  }
}
