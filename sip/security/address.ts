import { isIP } from 'node:net';
import { BadAddressError } from './errors.js';

/**
 * The key the gate counts by: the bare IP of the source, without port. A dual-stack socket reports IPv4 peers as
 * `::ffff:a.b.c.d`; those are folded to `a.b.c.d` so one host is one key whichever socket it reached.
 */
export function sourceKey(address: string): string {
  if (!address.includes(':')) return address;
  const a = address.toLowerCase(); // IPv6 hex digits in either case name one address (RFC 5952 §4.3 prefers lower)
  if (a.length > 7 && a.startsWith('::ffff:') && a.includes('.')) return a.slice(7);
  return a;
}

/** Like sourceKey, but refuses anything that is not an IP address (for operator input). */
export function checkedAddress(address: string): string {
  const key = sourceKey(address.trim());
  if (isIP(key) === 0) throw new BadAddressError(address);
  return key;
}

function ipv4ToInt(ip: string): number | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const v = Number(p);
    if (v > 255) return undefined;
    n = n * 256 + v;
  }
  return n;
}

/**
 * Addresses exempt from every rule: carrier trunks (a trunk sends many calls from one address, and banning a carrier
 * would cut a whole route). Accepts single addresses (IPv4 or IPv6) and IPv4 CIDR blocks, e.g. `203.0.113.0/28`.
 */
export class TrustedAddresses {
  readonly #exact = new Set<string>();
  readonly #blocks: Array<{ base: number; mask: number }> = [];

  constructor(entries: Iterable<string> = []) {
    for (const raw of entries) {
      const e = raw.trim();
      if (!e) continue;
      const slash = e.indexOf('/');
      if (slash < 0) {
        this.#exact.add(checkedAddress(e));
        continue;
      }
      const base = ipv4ToInt(e.slice(0, slash));
      const bits = Number(e.slice(slash + 1));
      if (base === undefined || !Number.isInteger(bits) || bits < 0 || bits > 32) throw new BadAddressError(e);
      const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
      this.#blocks.push({ base: (base & mask) >>> 0, mask });
    }
  }

  has(key: string): boolean {
    if (this.#exact.has(key)) return true;
    if (this.#blocks.length === 0) return false;
    const n = ipv4ToInt(key);
    if (n === undefined) return false;
    return this.#blocks.some((b) => (n & b.mask) >>> 0 === b.base);
  }
}
