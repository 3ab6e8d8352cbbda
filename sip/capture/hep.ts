/**
 * HEPv3 (the Homer Encapsulation Protocol, EEP): one captured message as the "HEP3" header (the four letters and
 * the packet's total length) followed by chunks, each a vendor id (0: the generic chunks), a type, its own length
 * with its 6-byte head, and its value; every number big-endian. The chunks written are the ones Homer and sngrep
 * read for SIP: IP family and protocol, both addresses and ports, the time in seconds and microseconds, the
 * protocol type (1: SIP), the capture agent id, the payload and the correlation id.
 */
import net from 'node:net';
import { ipBytes, unmapped } from './ip-bytes.js';

export interface HepMessage {
  /** 6 for TCP (TCP, TLS and WebSocket transports), 17 for UDP. */
  ipProtocol: 6 | 17;
  srcAddress: string;
  srcPort: number;
  dstAddress: string;
  dstPort: number;
  /** Unix epoch milliseconds (a fraction carries the microseconds). */
  at: number;
  captureId: number;
  payload: Buffer;
  /** Ties the messages of one call's legs together in Homer (chunk 0x11). */
  correlationId?: string;
}

export const HEP_CHUNK = {
  ipFamily: 0x01,
  ipProtocol: 0x02,
  ipv4Src: 0x03,
  ipv4Dst: 0x04,
  ipv6Src: 0x05,
  ipv6Dst: 0x06,
  srcPort: 0x07,
  dstPort: 0x08,
  timeSeconds: 0x09,
  timeMicros: 0x0a,
  protocolType: 0x0b,
  captureId: 0x0c,
  payload: 0x0f,
  correlationId: 0x11,
} as const;

/** AF_INET and AF_INET6 as HEP carries them (Linux's values, which Homer and sngrep expect). */
const FAMILY_IPV4 = 2;
const FAMILY_IPV6 = 10;
const PROTOCOL_SIP = 1;

/** Encodes one message as a HEPv3 packet; an address that is not an IP address is written as the unspecified one. */
export function encodeHep3(m: HepMessage): Buffer {
  const v6 = net.isIPv6(unmapped(m.srcAddress)) || net.isIPv6(unmapped(m.dstAddress));
  const chunks: Buffer[] = [];
  const chunk = (type: number, value: Buffer) => {
    const head = Buffer.alloc(6);
    head.writeUInt16BE(0, 0);
    head.writeUInt16BE(type, 2);
    head.writeUInt16BE(6 + value.length, 4);
    chunks.push(head, value);
  };
  const u8 = (n: number) => Buffer.from([n & 0xff]);
  const u16 = (n: number) => {
    const b = Buffer.alloc(2);
    b.writeUInt16BE(n & 0xffff);
    return b;
  };
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n >>> 0);
    return b;
  };
  const seconds = Math.floor(m.at / 1000);
  const micros = Math.min(999_999, Math.max(0, Math.round((m.at - seconds * 1000) * 1000)));
  chunk(HEP_CHUNK.ipFamily, u8(v6 ? FAMILY_IPV6 : FAMILY_IPV4));
  chunk(HEP_CHUNK.ipProtocol, u8(m.ipProtocol));
  if (v6) {
    chunk(HEP_CHUNK.ipv6Src, ipBytes(m.srcAddress, true));
    chunk(HEP_CHUNK.ipv6Dst, ipBytes(m.dstAddress, true));
  } else {
    chunk(HEP_CHUNK.ipv4Src, ipBytes(m.srcAddress, false));
    chunk(HEP_CHUNK.ipv4Dst, ipBytes(m.dstAddress, false));
  }
  chunk(HEP_CHUNK.srcPort, u16(m.srcPort));
  chunk(HEP_CHUNK.dstPort, u16(m.dstPort));
  chunk(HEP_CHUNK.timeSeconds, u32(seconds));
  chunk(HEP_CHUNK.timeMicros, u32(micros));
  chunk(HEP_CHUNK.protocolType, u8(PROTOCOL_SIP));
  chunk(HEP_CHUNK.captureId, u32(m.captureId));
  if (m.correlationId) chunk(HEP_CHUNK.correlationId, Buffer.from(m.correlationId, 'utf8'));
  chunk(HEP_CHUNK.payload, m.payload);
  const header = Buffer.alloc(6);
  header.write('HEP3', 0, 'latin1');
  const total = 6 + chunks.reduce((n, b) => n + b.length, 0);
  header.writeUInt16BE(total, 4);
  return Buffer.concat([header, ...chunks], total);
}

/** The largest payload a HEP packet carries: its length field is 16 bits and the chunks before it take ~120 bytes. */
export const HEP_MAX_PAYLOAD = 65_535 - 256;
