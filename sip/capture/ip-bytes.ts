import net from 'node:net';

/** An IPv4-mapped IPv6 address ("::ffff:192.0.2.1") as the IPv4 address it maps; any other address as it is. */
export function unmapped(address: string): string {
  return address.startsWith('::ffff:') && net.isIPv4(address.slice(7)) ? address.slice(7) : address;
}

/**
 * An address as the 4 bytes of IPv4 or, with `v6`, the 16 of IPv6 (an IPv4 address then IPv4-mapped); what is not
 * an IP address is written as zeros (the unspecified address).
 */
export function ipBytes(address: string, v6: boolean): Buffer {
  const a = unmapped(address);
  if (!v6) return net.isIPv4(a) ? Buffer.from(a.split('.').map(Number)) : Buffer.alloc(4);
  const out = Buffer.alloc(16);
  if (net.isIPv4(a)) {
    out.writeUInt16BE(0xffff, 10);
    Buffer.from(a.split('.').map(Number)).copy(out, 12);
    return out;
  }
  if (!net.isIPv6(a)) return out;
  const [head = '', tail = ''] = a.split('::');
  const groups = (s: string): string[] => {
    if (s === '') return [];
    const g = s.split(':');
    const last = g[g.length - 1]!;
    if (!net.isIPv4(last)) return g;
    const b = last.split('.').map(Number);
    return [...g.slice(0, -1), ((b[0]! << 8) | b[1]!).toString(16), ((b[2]! << 8) | b[3]!).toString(16)];
  };
  const h = groups(head);
  const t = groups(tail);
  const all = a.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  all.slice(0, 8).forEach((g, i) => out.writeUInt16BE(parseInt(g, 16) || 0, i * 2));
  return out;
}
