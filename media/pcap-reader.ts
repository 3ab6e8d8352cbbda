import { MediaError } from './errors.js';

/**
 * A reader for classic libpcap files as rtpengine's `--recording-method=pcap` writes them: link type 101 (raw
 * IP, `--recording-format=raw`, the default) or 1 (Ethernet, `--recording-format=eth`), holding IPv4 or IPv6 UDP
 * datagrams. rtpengine records each packet as it arrived from a peer, so the destination port tells which of
 * its local ports (hence which leg) the packet came in on.
 */
export interface PcapUdpPacket {
  /** Capture time in seconds (fractional). */
  time: number;
  srcAddress: string;
  srcPort: number;
  dstAddress: string;
  dstPort: number;
  payload: Buffer;
}

export function readPcapUdp(file: Buffer): PcapUdpPacket[] {
  if (file.length < 24) throw new MediaError('MEDIA_RECORDING_FAILED', 'pcap file too short');
  const magic = file.readUInt32LE(0);
  let little: boolean;

  if (magic === 0xa1b2c3d4 || magic === 0xa1b23c4d) little = true;
  else if (file.readUInt32BE(0) === 0xa1b2c3d4 || file.readUInt32BE(0) === 0xa1b23c4d) little = false;
  else throw new MediaError('MEDIA_RECORDING_FAILED', 'not a pcap file');
  const nano = (little ? magic : file.readUInt32BE(0)) === 0xa1b23c4d;
  const u32 = (at: number): number => (little ? file.readUInt32LE(at) : file.readUInt32BE(at));
  const linkType = u32(20);
  const packets: PcapUdpPacket[] = [];
  let pos = 24;
  while (pos + 16 <= file.length) {
    const time = u32(pos) + u32(pos + 4) / (nano ? 1e9 : 1e6);
    const captured = u32(pos + 8);
    const frame = file.subarray(pos + 16, pos + 16 + captured);
    pos += 16 + captured;
    let ip = frame;
    if (linkType === 1) {
      if (frame.length < 14) continue;
      ip = frame.subarray(14);
    } else if (linkType !== 101 && linkType !== 12) {
      throw new MediaError('MEDIA_RECORDING_FAILED', `pcap link type ${linkType} not supported`);
    }
    const udp = parseIpUdp(ip, time);
    if (udp) packets.push(udp);
  }
  return packets;
}

function parseIpUdp(ip: Buffer, time: number): PcapUdpPacket | undefined {
  const version = (ip[0] ?? 0) >> 4;
  let udpStart: number;
  let src: string;
  let dst: string;
  if (version === 4) {
    if ((ip[9] ?? 0) !== 17) return undefined;
    udpStart = ((ip[0] ?? 0) & 0x0f) * 4;
    src = [...ip.subarray(12, 16)].join('.');
    dst = [...ip.subarray(16, 20)].join('.');
  } else if (version === 6) {
    if ((ip[6] ?? 0) !== 17) return undefined; // extension headers are not written by rtpengine
    udpStart = 40;
    src = ipv6(ip.subarray(8, 24));
    dst = ipv6(ip.subarray(24, 40));
  } else {
    return undefined;
  }
  if (ip.length < udpStart + 8) return undefined;
  const udpLength = ip.readUInt16BE(udpStart + 4);
  return {
    time,
    srcAddress: src,
    srcPort: ip.readUInt16BE(udpStart),
    dstAddress: dst,
    dstPort: ip.readUInt16BE(udpStart + 2),
    payload: ip.subarray(udpStart + 8, Math.min(ip.length, udpStart + udpLength)),
  };
}

function ipv6(b: Buffer): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i).toString(16));
  return groups.join(':');
}
