/**
 * A call's SIP messages as a classic libpcap file Wireshark and tcpdump open: link type 101 (raw IP), each message
 * one packet with an IPv4 or IPv6 header and a UDP header made up around it (whatever transport it came by: one
 * message a datagram is what SIP dissectors read without reassembly).
 */
import net from 'node:net';
import { ipBytes, unmapped } from './ip-bytes.js';
import type { CapturedMessage } from './sip-ladder.js';

const LINKTYPE_RAW = 101;
/** The largest UDP payload an IPv4 packet carries; longer messages are cut (the record says how long they were). */
const MAX_PAYLOAD = 65_507;

export function writePcap(messages: readonly Pick<CapturedMessage, PcapFields>[]): Buffer {
  const header = Buffer.alloc(24);
  header.writeUInt32LE(0xa1b2c3d4, 0);
  header.writeUInt16LE(2, 4);
  header.writeUInt16LE(4, 6);
  header.writeInt32LE(0, 8);
  header.writeUInt32LE(0, 12);
  header.writeUInt32LE(65_535, 16);
  header.writeUInt32LE(LINKTYPE_RAW, 20);
  const parts: Buffer[] = [header];
  for (const m of messages) {
    const packet = ipUdp(m);
    const record = Buffer.alloc(16);
    const seconds = Math.floor(m.at / 1000);
    record.writeUInt32LE(seconds, 0);
    record.writeUInt32LE(Math.min(999_999, Math.round((m.at - seconds * 1000) * 1000)), 4);
    record.writeUInt32LE(packet.length, 8);
    record.writeUInt32LE(packet.length, 12);
    parts.push(record, packet);
  }
  return Buffer.concat(parts);
}

type PcapFields = 'at' | 'srcAddress' | 'srcPort' | 'dstAddress' | 'dstPort' | 'data';

function ipUdp(m: Pick<CapturedMessage, PcapFields>): Buffer {
  const payload = m.data.length > MAX_PAYLOAD ? m.data.subarray(0, MAX_PAYLOAD) : m.data;
  const v6 = net.isIPv6(unmapped(m.srcAddress)) || net.isIPv6(unmapped(m.dstAddress));
  const src = ipBytes(m.srcAddress, v6);
  const dst = ipBytes(m.dstAddress, v6);
  const udp = Buffer.alloc(8);
  udp.writeUInt16BE(m.srcPort, 0);
  udp.writeUInt16BE(m.dstPort, 2);
  udp.writeUInt16BE(8 + payload.length, 4);
  // The UDP checksum over the pseudo-header (RFC 768; RFC 8200 §8.1 for IPv6, where it is required).
  const pseudo = Buffer.alloc(v6 ? 40 : 12);
  src.copy(pseudo, 0);
  dst.copy(pseudo, src.length);
  if (v6) {
    pseudo.writeUInt32BE(8 + payload.length, 32);
    pseudo.writeUInt8(17, 39);
  } else {
    pseudo.writeUInt8(17, 9);
    pseudo.writeUInt16BE(8 + payload.length, 10);
  }
  udp.writeUInt16BE(checksum([pseudo, udp, payload]) || 0xffff, 6);
  let ip: Buffer;
  if (v6) {
    ip = Buffer.alloc(40);
    ip.writeUInt32BE(0x60000000, 0);
    ip.writeUInt16BE(8 + payload.length, 4);
    ip.writeUInt8(17, 6);
    ip.writeUInt8(64, 7);
    src.copy(ip, 8);
    dst.copy(ip, 24);
  } else {
    ip = Buffer.alloc(20);
    ip.writeUInt8(0x45, 0);
    ip.writeUInt16BE(20 + 8 + payload.length, 2);
    ip.writeUInt16BE(0x4000, 6); // don't fragment
    ip.writeUInt8(64, 8);
    ip.writeUInt8(17, 9);
    src.copy(ip, 12);
    dst.copy(ip, 16);
    ip.writeUInt16BE(checksum([ip]), 10);
  }
  return Buffer.concat([ip, udp, payload]);
}

/** The Internet checksum (RFC 1071) of the bytes of `parts` taken as one run. */
function checksum(parts: Buffer[]): number {
  let sum = 0;
  let odd: number | undefined;
  for (const p of parts)
    for (let i = 0; i < p.length; i++) {
      if (odd === undefined) odd = p[i]!;
      else {
        sum += (odd << 8) | p[i]!;
        odd = undefined;
      }
    }
  if (odd !== undefined) sum += odd << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}
