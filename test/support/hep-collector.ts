import dgram from 'node:dgram';
import net from 'node:net';

/** A HEPv3 packet as a collector reads it (test/support: decoded independently of sip/capture/hep.ts). */
export interface HepPacket {
  family: number;
  ipProtocol: number;
  src: string;
  dst: string;
  srcPort: number;
  dstPort: number;
  seconds: number;
  micros: number;
  protocolType: number;
  captureId: number;
  correlationId: string | undefined;
  payload: string;
  /** Every chunk type seen, in order. */
  types: number[];
}

function ipText(b: Buffer): string {
  if (b.length === 4) return [...b].join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i).toString(16));
  return net.isIPv6(groups.join(':')) ? groups.join(':') : '';
}

/** Decodes a HEPv3 packet; throws on anything malformed (a length that does not add up, an unknown vendor). */
export function decodeHep3(p: Buffer): HepPacket {
  if (p.toString('latin1', 0, 4) !== 'HEP3') throw new Error('not HEP3');
  const total = p.readUInt16BE(4);
  if (total !== p.length) throw new Error(`HEP length ${total} but ${p.length} bytes`);
  const out: Partial<HepPacket> & { types: number[] } = { types: [] };
  let at = 6;
  while (at < total) {
    const vendor = p.readUInt16BE(at);
    const type = p.readUInt16BE(at + 2);
    const len = p.readUInt16BE(at + 4);
    if (vendor !== 0 || len < 6 || at + len > total) throw new Error(`bad chunk at ${at}`);
    const v = p.subarray(at + 6, at + len);
    out.types.push(type);
    if (type === 1) out.family = v[0];
    else if (type === 2) out.ipProtocol = v[0];
    else if (type === 3 || type === 5) out.src = ipText(v);
    else if (type === 4 || type === 6) out.dst = ipText(v);
    else if (type === 7) out.srcPort = v.readUInt16BE(0);
    else if (type === 8) out.dstPort = v.readUInt16BE(0);
    else if (type === 9) out.seconds = v.readUInt32BE(0);
    else if (type === 10) out.micros = v.readUInt32BE(0);
    else if (type === 11) out.protocolType = v[0];
    else if (type === 12) out.captureId = v.readUInt32BE(0);
    else if (type === 15) out.payload = v.toString('utf8');
    else if (type === 17) out.correlationId = v.toString('utf8');
    at += len;
  }
  return out as HepPacket;
}

/** A HEP collector on a UDP port: keeps every packet decoded (a malformed one fails `errors`). */
export class HepCollector {
  readonly packets: HepPacket[] = [];
  readonly errors: string[] = [];
  readonly #socket = dgram.createSocket('udp4');

  async bind(port: number): Promise<this> {
    this.#socket.on('message', (m) => {
      try {
        this.packets.push(decodeHep3(m));
      } catch (e) {
        this.errors.push((e as Error).message);
      }
    });
    await new Promise<void>((resolve) => this.#socket.bind(port, '127.0.0.1', resolve));
    return this;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#socket.close(() => resolve()));
  }
}
