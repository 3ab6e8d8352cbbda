/** RTP fixed header (RFC 3550 section 5.1), enough to relay, record and test G.711 and RFC 4733 events. */
export interface RtpPacket {
  payloadType: number;
  marker: boolean;
  sequence: number;
  timestamp: number;
  ssrc: number;
  payload: Buffer;
}

export function parseRtp(buf: Buffer): RtpPacket | undefined {
  if (buf.length < 12 || (buf[0] ?? 0) >> 6 !== 2) return undefined;
  const b0 = buf[0] ?? 0;
  const b1 = buf[1] ?? 0;
  const csrcCount = b0 & 0x0f;
  let offset = 12 + csrcCount * 4;
  if (b0 & 0x10) {
    // Header extension (RFC 3550 5.3.1): 16-bit profile, 16-bit length in 32-bit words.
    if (buf.length < offset + 4) return undefined;
    offset += 4 + buf.readUInt16BE(offset + 2) * 4;
  }
  let end = buf.length;
  if (b0 & 0x20) end -= buf[buf.length - 1] ?? 0; // padding count in the last octet
  if (offset > end) return undefined;
  const payloadType = b1 & 0x7f;
  // RTCP multiplexed on the same port (RFC 5761 section 4): packet types 200-206 land on PT 72-78.
  if (payloadType >= 72 && payloadType <= 78) return undefined;
  return {
    payloadType,
    marker: (b1 & 0x80) !== 0,
    sequence: buf.readUInt16BE(2),
    timestamp: buf.readUInt32BE(4),
    ssrc: buf.readUInt32BE(8),
    payload: buf.subarray(offset, end),
  };
}

export function buildRtp(p: Omit<RtpPacket, 'marker'> & { marker?: boolean }): Buffer {
  const header = Buffer.alloc(12);
  header[0] = 0x80;
  header[1] = (p.marker ? 0x80 : 0) | (p.payloadType & 0x7f);
  header.writeUInt16BE(p.sequence & 0xffff, 2);
  header.writeUInt32BE(p.timestamp >>> 0, 4);
  header.writeUInt32BE(p.ssrc >>> 0, 8);
  return Buffer.concat([header, p.payload]);
}

/** RFC 4733 section 2.3 event codes 0-15 to DTMF characters (16 is hook flash). */
export const DTMF_EVENT_DIGITS = '0123456789*#ABCD';
