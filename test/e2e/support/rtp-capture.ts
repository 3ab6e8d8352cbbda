import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeG711 } from '../../../media/g711.js';
import { readPcapUdp } from '../../../media/pcap-reader.js';
import { parseRtp } from '../../../media/rtp-packet.js';

/** One PCMU packet a peer was sent: its capture time (ms since the epoch) and its decoded samples. */
export interface HeardPacket {
  readonly at: number;
  readonly samples: Int16Array;
}

/**
 * What a SIPp peer hears, captured on loopback with tcpdump:
 * every UDP packet sent to `port` on lo, read back as PCMU RTP. SIPp plays its own file from that port, so its
 * media port cannot also be a sink of ours. The argv is fixed; the only value in it is a port number.
 */
export class RtpCapture {
  readonly #file: string;
  #proc: ChildProcess | undefined;

  constructor(readonly port: number) {
    this.#file = path.join(mkdtempSync(path.join(os.tmpdir(), 'simu-cap-')), 'cap.pcap');
  }

  async start(): Promise<this> {
    const proc = spawn(
      'tcpdump',
      ['-i', 'lo', '-U', '-n', '-w', this.#file, 'udp', 'and', 'dst', 'port', String(this.port)],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    this.#proc = proc;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('tcpdump did not start')), 5000);
      proc.stderr!.on('data', (d) => {
        if (String(d).includes('listening on')) {
          clearTimeout(timer);
          resolve();
        }
      });
      proc.once('exit', (code) => reject(new Error(`tcpdump exited ${code}`)));
    });
    return this;
  }

  /** The PCMU packets captured so far (the file is written packet by packet: -U). */
  packets(): HeardPacket[] {
    let bytes: Buffer;
    try {
      bytes = readFileSync(this.#file);
    } catch {
      return [];
    }
    if (bytes.length < 24) return [];
    const out: HeardPacket[] = [];
    let udp;
    try {
      udp = readPcapUdp(bytes);
    } catch {
      return [];
    }
    for (const u of udp) {
      const rtp = parseRtp(u.payload);
      if (rtp?.payloadType === 0) out.push({ at: u.time * 1000, samples: decodeG711(rtp.payload, 0) });
    }
    return out;
  }

  stop(): void {
    this.#proc?.kill('SIGTERM');
    this.#proc = undefined;
  }
}

/** Raw mu-law of a `hz` sine, `seconds` long, at a third of full scale (sox): what a SIPp leg says (rtp_stream). */
export function toneUlawFile(hz: number, seconds: number): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'simu-tone-')), `${hz}.ulaw`);
  const args = ['-n', '-r', '8000', '-c', '1', '-t', 'ul', file, 'synth', String(seconds), 'sine', String(hz)];
  execFileSync('sox', [...args, 'vol', '0.3']);
  return file;
}
