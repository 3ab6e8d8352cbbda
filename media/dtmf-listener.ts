import { createSocket, type Socket } from 'node:dgram';
import { DTMF_EVENT_DIGITS } from './rtp-packet.js';
import { TypedEmitter } from '../kit/index.js';

/**
 * DTMF from the legs. rtpengine decodes RFC 4733 telephone-events and, with `--dtmf-log-dest=IP:PORT`, sends one
 * JSON datagram per digit: {"callid", "source_tag", "tags", "type":"DTMF", "event", "duration" (ms), "volume"}.
 * The event codes are those of RFC 4733 section 3.2 (0-9, 10 = '*', 11 = '#', 12-15 = A-D).
 */
export interface DtmfEvent {
  callId: string;
  /** The leg (from-tag) that sent the digit. */
  legTag: string;
  digit: string;
  durationMs: number;
  volume?: number;
  /**
   * `rfc4733-log` (rtpengine's log, at the end of the key; the default when absent), `rtp-event` (an RFC 4733 event
   * read by an IVR leg's endpoint as it starts) or `inband` (tones in an IVR leg's audio).
   */
  source?: 'rfc4733-log' | 'rtp-event' | 'inband';
}

export class DtmfListener extends TypedEmitter<{ dtmf: [DtmfEvent] }> {
  #socket: Socket | undefined;

  async listen(port: number, address = '127.0.0.1'): Promise<number> {
    const socket = createSocket(address.includes(':') ? 'udp6' : 'udp4');
    socket.on('message', (msg) => this.#onMessage(msg));
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, address, () => resolve());
    });
    socket.on('error', () => undefined);
    this.#socket = socket;
    return socket.address().port;
  }

  #onMessage(msg: Buffer): void {
    let data: Record<string, unknown>;
    try {
      data = JSON.parse(msg.toString('utf8')) as Record<string, unknown>;
    } catch {
      return;
    }
    if (data.type !== 'DTMF' || typeof data.callid !== 'string' || typeof data.event !== 'number') return;
    const digit = DTMF_EVENT_DIGITS[data.event];
    if (digit === undefined) return; // hook flash and others are not digits
    this.safeEmit('dtmf', {
      callId: data.callid,
      legTag: typeof data.source_tag === 'string' ? data.source_tag : '',
      digit,
      durationMs: typeof data.duration === 'number' ? data.duration : 0,
      volume: typeof data.volume === 'number' ? data.volume : undefined,
    });
  }

  close(): void {
    this.#socket?.close();
    this.#socket = undefined;
  }
}
