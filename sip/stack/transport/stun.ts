/**
 * STUN keep-alives on the SIP UDP port (RFC 5626 §4.4.2, §8.4): a phone registered with SIP outbound over UDP sends
 * STUN Binding requests (RFC 5389) to the port it registered on, to keep its NAT open and to learn whether its
 * public address changed. The switch answers them with a Binding success response carrying XOR-MAPPED-ADDRESS; any
 * other STUN message is dropped. Pure parsing and building, bounded by the datagram.
 */
const MAGIC = 0x2112a442;
const BINDING_REQUEST = 0x0001;
const BINDING_SUCCESS = 0x0101;
const XOR_MAPPED_ADDRESS = 0x0020;

/** Whether a datagram is a STUN message (RFC 5389 §6: top two bits zero, the magic cookie, length a multiple of 4). */
export function isStun(data: Buffer): boolean {
  return (
    data.length >= 20 &&
    (data[0]! & 0xc0) === 0 &&
    data.readUInt32BE(4) === MAGIC &&
    data.readUInt16BE(2) % 4 === 0 &&
    data.readUInt16BE(2) + 20 === data.length
  );
}

/**
 * The Binding success response to a Binding request from `address:port` (IPv4), or undefined when the datagram is
 * not a Binding request or the address is not IPv4.
 */
export function stunBindingResponse(data: Buffer, address: string, port: number): Buffer | undefined {
  if (!isStun(data) || data.readUInt16BE(0) !== BINDING_REQUEST) return undefined;
  const octets = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (!octets) return undefined;
  const res = Buffer.alloc(20 + 12);
  res.writeUInt16BE(BINDING_SUCCESS, 0);
  res.writeUInt16BE(12, 2);
  res.writeUInt32BE(MAGIC, 4);
  data.copy(res, 8, 8, 20); // the transaction id
  res.writeUInt16BE(XOR_MAPPED_ADDRESS, 20);
  res.writeUInt16BE(8, 22);
  res.writeUInt8(0, 24);
  res.writeUInt8(0x01, 25); // IPv4
  res.writeUInt16BE(port ^ (MAGIC >>> 16), 26);
  const ip = octets.slice(1).reduce((n, o) => n * 256 + Number(o), 0);
  res.writeUInt32BE((ip ^ MAGIC) >>> 0, 28);
  return res;
}
