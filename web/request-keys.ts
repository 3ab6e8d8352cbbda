/** Normalised forms of request parts that the portal's guards judge. */

/** Whose sign-in budget a request spends: its IPv4 address, or the /64 of an IPv6 one (one host's usual share). */
export function sourceKey(ip: string): string {
  const v4 = /^(?:::ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (v4) return v4[1]!;
  if (!ip.includes(':')) return ip;
  const [head = '', tail = ''] = ip.split('%')[0]!.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t] : h;
  return (
    groups
      .slice(0, 4)
      .map((g) => (parseInt(g, 16) || 0).toString(16))
      .join(':') + '::/64'
  );
}

/** A path as lenient routers read it: percent-decoded, lower-case, repeated and trailing slashes dropped. */
export function loosePath(p: string): string {
  let d = p;
  try {
    d = decodeURIComponent(p);
  } catch {
    /* malformed escapes: judged as sent */
  }
  return d
    .toLowerCase()
    .replace(/\/{2,}/g, '/')
    .replace(/\/+$/, '');
}
