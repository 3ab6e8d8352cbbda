import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

/**
 * Where the switch may send a request that a customer chose the address of (call-control and action webhooks,
 * Redirect, fallback audio, Play URLs, status callbacks), against server-side request forgery: without
 * this, a customer's URL reaches the box's own services, the operator's private network and the cloud metadata
 * endpoint (169.254.169.254). docs/security.md, "Outbound URLs", is the operator's description of this policy.
 *
 * Every address is put in one class; the policy refuses or allows whole classes:
 * - always refused: `unspecified` (0.0.0.0/8, ::, which Linux connects to the box itself), `link-local`
 *   (169.254/16, fe80::/10: cloud metadata lives there), `multicast`, `reserved` (240/4, 255.255.255.255,
 *   192.0.0/24 where Oracle Cloud keeps its metadata at 192.0.0.192, documentation ranges);
 * - refused unless the operator allows private destinations (`webhooks.allowPrivate`): `loopback`, `private`
 *   (RFC 1918, 198.18/15), `cgnat` (100.64/10), `ula` (fc00::/7) and `self` (any address of this box's
 *   interfaces, which may well be public);
 * - `public`: allowed.
 * Networks listed in `allow` are allowed whatever their class (the explicit way to reach, say, a link-local
 * host); networks listed in `deny` are refused whatever their class (tests use it to refuse one loopback address
 * while allowing another).
 */
export type AddressClass =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'cgnat'
  | 'link-local'
  | 'ula'
  | 'multicast'
  | 'reserved'
  | 'self';

/** Classes an operator can allow with `allowPrivate`; the rest of the non-public ones never are. */
export const PRIVATE_CLASSES: ReadonlySet<AddressClass> = new Set(['loopback', 'private', 'cgnat', 'ula', 'self']);

interface Network {
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

/** IPv4 ranges (RFC 6890 special-purpose registry) and their class; the first match wins. */
const V4_RANGES: ReadonlyArray<readonly [string, AddressClass]> = [
  ['0.0.0.0/8', 'unspecified'],
  ['127.0.0.0/8', 'loopback'],
  ['10.0.0.0/8', 'private'],
  ['172.16.0.0/12', 'private'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'private'],
  ['100.64.0.0/10', 'cgnat'],
  ['169.254.0.0/16', 'link-local'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'reserved'],
  ['198.51.100.0/24', 'reserved'],
  ['203.0.113.0/24', 'reserved'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'], // 255.255.255.255 (broadcast) included
];

const V6_RANGES: ReadonlyArray<readonly [string, AddressClass]> = [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['fc00::/7', 'ula'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'link-local'], // deprecated site-local
  ['ff00::/8', 'multicast'],
  ['2001:db8::/32', 'reserved'],
  ['100::/64', 'reserved'], // discard-only
];

/** IPv6 prefixes that carry an IPv4 address in their last 32 bits: the IPv4 address decides. */
const V4_EMBEDDING: readonly string[] = [
  '::ffff:0:0/96', // IPv4-mapped
  '::/96', // IPv4-compatible (deprecated; :: and ::1 are matched before)
  '64:ff9b::/96', // NAT64 well-known prefix (RFC 6052)
  '64:ff9b:1::/48', // local-use NAT64 (RFC 8215)
];

/** Parses a literal IPv4 or IPv6 address (an IPv6 zone `%eth0` is ignored) into its bytes; undefined otherwise. */
export function parseAddress(text: string): Uint8Array | undefined {
  const address = text.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(address);
  if (family === 4) return Uint8Array.from(address.split('.').map(Number));
  if (family !== 6) return undefined;
  let head = address;
  let v4tail: number[] = [];
  const dotted = /:(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (dotted) {
    v4tail = dotted[1]!.split('.').map(Number);
    head = `${address.slice(0, dotted.index)}:0:0`;
  }
  const [left, right] = head.includes('::') ? head.split('::') : [head, undefined];
  const words = (s: string | undefined) => (s ? s.split(':').filter((w) => w !== '') : []);
  const l = words(left);
  const r = words(right);
  const all = right === undefined ? l : [...l, ...Array(8 - l.length - r.length).fill('0'), ...r];
  const bytes = new Uint8Array(16);
  all.forEach((w, i) => {
    const n = parseInt(w, 16);
    bytes[i * 2] = n >> 8;
    bytes[i * 2 + 1] = n & 0xff;
  });
  if (v4tail.length === 4) bytes.set(v4tail, 12);
  return bytes;
}

function parseNetwork(cidr: string): Network {
  const [addr, bits] = cidr.split('/');
  const bytes = parseAddress(addr ?? '');
  if (!bytes) throw new TypeError(`not a network: ${cidr}`);
  const prefix = bits === undefined ? bytes.length * 8 : Number(bits);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > bytes.length * 8) throw new TypeError(`bad prefix: ${cidr}`);
  return { bytes, prefix };
}

function inNetwork(bytes: Uint8Array, net: Network): boolean {
  if (bytes.length !== net.bytes.length) return false;
  for (let bit = 0; bit < net.prefix; bit += 8) {
    const take = Math.min(8, net.prefix - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((bytes[bit / 8]! & mask) !== (net.bytes[bit / 8]! & mask)) return false;
  }
  return true;
}

const V4 = V4_RANGES.map(([cidr, cls]) => [parseNetwork(cidr), cls] as const);
const V6 = V6_RANGES.map(([cidr, cls]) => [parseNetwork(cidr), cls] as const);
const EMBEDDING = V4_EMBEDDING.map(parseNetwork);

/** The IPv4 address an IPv6 address stands for (mapped, compatible, NAT64), or the address itself. */
function effective(bytes: Uint8Array): Uint8Array {
  if (bytes.length !== 16 || !EMBEDDING.some((n) => inNetwork(bytes, n))) return bytes;
  // :: and ::1 sit inside ::/96 but are IPv6's own unspecified and loopback addresses.
  if (inNetwork(bytes, V6[0]![0]) || inNetwork(bytes, V6[1]![0])) return bytes;
  return bytes.slice(12);
}

/** The class of a literal address, ignoring this box's own addresses (see `UrlPolicy.classify`). */
export function classifyAddress(address: string): AddressClass {
  const parsed = parseAddress(address);
  if (!parsed) throw new TypeError(`not an IP address: ${address}`);
  const bytes = effective(parsed);
  for (const [net, cls] of bytes.length === 4 ? V4 : V6) if (inNetwork(bytes, net)) return cls;
  return 'public';
}

/** The addresses of this box's interfaces, read once (a webhook must not reach the switch's own services). */
let ownAddresses: Uint8Array[] | undefined;
function selfAddresses(): Uint8Array[] {
  ownAddresses ??= Object.values(networkInterfaces())
    .flat()
    .flatMap((i) => (i ? [parseAddress(i.address)] : []))
    .filter((b): b is Uint8Array => b !== undefined)
    .map(effective);
  return ownAddresses;
}

export interface UrlPolicyOptions {
  /** Allow loopback, RFC 1918, CGNAT, ULA and this box's addresses (config `webhooks.allowPrivate`). */
  readonly allowPrivate?: boolean;
  /** Networks (CIDR or single addresses) always allowed, whatever their class. */
  readonly allow?: readonly string[];
  /** Networks always refused, whatever their class or `allow`. */
  readonly deny?: readonly string[];
}

export interface AddressVerdict {
  readonly allowed: boolean;
  readonly class: AddressClass;
}

/** Addresses whose verdict a policy remembers at most (a map of a few kilobytes). */
const MAX_REMEMBERED_VERDICTS = 1024;

/** The decision for one destination address. Immutable; share one per process. */
export class UrlPolicy {
  readonly allowPrivate: boolean;
  readonly #verdicts = new Map<string, AddressVerdict>();
  readonly #allow: Network[];
  readonly #deny: Network[];

  constructor(options: UrlPolicyOptions = {}) {
    this.allowPrivate = options.allowPrivate ?? false;
    this.#allow = (options.allow ?? []).map(parseNetwork);
    this.#deny = (options.deny ?? []).map(parseNetwork);
  }

  /** The strict default: public destinations only. */
  static readonly strict = new UrlPolicy();

  classify(address: string): AddressClass {
    const cls = classifyAddress(address);
    if (cls !== 'public') return cls;
    const bytes = effective(parseAddress(address)!);
    return selfAddresses().some((own) => inNetwork(bytes, { bytes: own, prefix: own.length * 8 })) ? 'self' : cls;
  }

  /**
   * The verdict for `address`, remembered (the policy and this box's addresses do not change while it runs): a
   * status callback checks its receiver's address on every attempt.
   */
  check(address: string): AddressVerdict {
    let verdict = this.#verdicts.get(address);
    if (verdict === undefined) {
      verdict = Object.freeze(this.#decide(address));
      if (this.#verdicts.size >= MAX_REMEMBERED_VERDICTS) this.#verdicts.clear();
      this.#verdicts.set(address, verdict);
    }
    return verdict;
  }

  #decide(address: string): AddressVerdict {
    const cls = this.classify(address);
    const raw = parseAddress(address)!;
    const forms = [raw, effective(raw)];
    const listed = (nets: Network[]) => nets.some((n) => forms.some((b) => inNetwork(b, n)));
    if (listed(this.#deny)) return { allowed: false, class: cls };
    if (listed(this.#allow)) return { allowed: true, class: cls };
    return { allowed: cls === 'public' || (this.allowPrivate && PRIVATE_CLASSES.has(cls)), class: cls };
  }
}

/**
 * The verdict on a URL whose host is a literal address (`http://127.0.0.1/`, `http://[::1]/`, and the forms the
 * WHATWG parser turns into one: `http://2130706433/`, `http://0x7f.1/`), or undefined for a host name, which only
 * resolution can judge. For early refusals at the API edge; the guarded fetch still checks every hop.
 */
export function literalUrlVerdict(url: string, policy: UrlPolicy): AddressVerdict | undefined {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return undefined;
  }
  return isIP(host) === 0 ? undefined : policy.check(host);
}
