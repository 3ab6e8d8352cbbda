/**
 * The SIP front (a proxy such as Kamailio in front of several nodes, deploy/kamailio/) as a node sees it. Requests
 * from a trusted front's address are read as the front reports them (docs/routing.md, "Behind a front"):
 *
 * - the sender is the Via below the front's own (RFC 3261 §18.2.1: the front stamps `received`, and `rport`
 *   per RFC 3581, on the sender's Via before it forwards), so carriers are told by their own address and the
 *   security gate counts each sender, not the front;
 * - a REGISTER's Path (RFC 3327) is stored with the binding, and requests to that binding carry it as their Route
 *   set, so they reach the phone through the front that holds its connection.
 *
 * From any other address a Via below the top one, or a Path, is the sender's word and is not believed.
 */
import { addressMatches } from './trunks.js';
import { parseNameAddr, parseVia, targetForUri, type SipRequest, type Target } from './stack/index.js';

/** Who sent a request: its own address, or the one a trusted front reported. */
export interface RequestOrigin {
  address: string;
  port: number;
  /** True when a trusted front reported it (the request's source is the front). */
  viaFront: boolean;
}

export class SipFront {
  readonly #addresses: readonly string[];

  /** `addresses`: the fronts' addresses or CIDR ranges (setting `sip.trustedFronts`); empty trusts none. */
  constructor(addresses: readonly string[]) {
    this.#addresses = addresses.map((a) => a.trim()).filter((a) => a.length > 0);
  }

  get enabled(): boolean {
    return this.#addresses.length > 0;
  }

  /** Whether `address` (a request's source) is a trusted front. */
  trusts(address: string): boolean {
    return this.#addresses.length > 0 && this.#addresses.some((p) => addressMatches(p, address));
  }

  /**
   * The sender of `req`: through a trusted front, the `received` (else the host) and `rport` (else the port) of the
   * second Via; otherwise, or when that Via is missing or unreadable, the request's own source.
   */
  origin(req: SipRequest): RequestOrigin {
    const address = req.source?.address ?? '';
    const port = req.source?.port ?? 0;
    if (!this.trusts(address)) return { address, port, viaFront: false };
    const vias = req.headers.getAll('via').flatMap(splitHeaderList);
    const below = vias.length > 1 ? parseVia(vias[1]!) : null;
    if (!below) return { address, port, viaFront: false };
    const received = below.params.get('received');
    const rport = Number(below.params.get('rport') ?? '');
    return {
      address: received || below.host.replace(/^\[|\]$/g, ''),
      port: Number.isInteger(rport) && rport > 0 ? rport : (below.port ?? 5060),
      viaFront: true,
    };
  }

  /** The Path header values of a REGISTER from a trusted front, in order (RFC 3327 §5.3); else none. */
  pathOf(req: SipRequest): string[] {
    if (!this.trusts(req.source?.address ?? '')) return [];
    return req.headers
      .getAll('path')
      .flatMap(splitHeaderList)
      .filter((v) => v.length > 0);
  }
}

/** A comma-separated header value split into its entries, commas inside `<...>` or quotes kept. */
function splitHeaderList(value: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quoted = false;
  let from = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === '"' && value[i - 1] !== '\\') quoted = !quoted;
    else if (!quoted && c === '<') depth++;
    else if (!quoted && c === '>') depth--;
    else if (!quoted && depth === 0 && c === ',') {
      out.push(value.slice(from, i).trim());
      from = i + 1;
    }
  }
  out.push(value.slice(from).trim());
  return out;
}

/**
 * The first hop of a request to a binding registered with a Path: the Path's first URI (RFC 3261 §8.1.2, a preloaded
 * loose-routing Route set is sent to its first entry), with the transport that URI names. Not the REGISTER's source:
 * over TCP from the front that is an ephemeral port no one listens on. Undefined when the entry is unreadable.
 */
export function pathNextHop(path: readonly string[]): Target | undefined {
  const first = path[0] === undefined ? null : parseNameAddr(path[0]);
  if (!first || (first.uri.scheme !== 'sip' && first.uri.scheme !== 'sips')) return undefined;
  return targetForUri(first.uri);
}
