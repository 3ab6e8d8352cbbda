/**
 * The names this switch answers to, for the digest-uri a phone may sign instead of the Request-URI (RFC 3261
 * §22.4 wants the Request-URI; SIPp and some desk phones sign the server they send to, `sip:<address>:<port>`):
 * its public host, its SIP domain and the account domains under it, a bare account uuid, the address it listens
 * on and every address of this box (a switch listening on 0.0.0.0 is reached on any of them), each with no port or
 * one of the switch's SIP ports. Any of these names no resource but the switch itself, so a digest over it
 * authorises nothing a digest over the Request-URI would not.
 */
import { networkInterfaces } from 'node:os';
import { accountOfHost } from './registrar-credentials.js';
import type { SipRequest, SipUri } from './stack/index.js';
import { systemClock, type Clock } from '../kit/index.js';

export interface SwitchNamesOptions {
  /** Config `publicHost`: the name or address phones and carriers are told to use. */
  publicHost: string;
  /** Config `sip.domain`: account domains are `<label>.<sip.domain>`. */
  domain: string;
  /** Config `sip.host`: the address listened on (0.0.0.0 or :: for every address). */
  listenHost: string;
  /** The SIP ports listened on (UDP/TCP, TLS, WS, WSS; 0 for a transport that is off). */
  ports: number[];
  /** This box's interface addresses (default: the operating system's, re-read at most once a minute). */
  localAddresses?: () => readonly string[];
  clock?: Pick<Clock, 'now'>;
}

/** How long the box's interface addresses are trusted before they are read again (addresses come and go). */
const INTERFACES_TTL_MS = 60_000;

export class SwitchNames {
  readonly #hosts: Set<string>;
  readonly #domain: string;
  readonly #ports: Set<number>;
  readonly #localAddresses: () => readonly string[];
  readonly #clock: Pick<Clock, 'now'>;
  #interfaces: { at: number; hosts: Set<string> } | undefined;

  constructor(opts: SwitchNamesOptions) {
    const names = [opts.publicHost, opts.domain, opts.listenHost].map((h) => bare(h.toLowerCase()));
    this.#hosts = new Set(names.filter((h) => h !== '' && !UNSPECIFIED.has(h)));
    this.#domain = opts.domain.toLowerCase();
    this.#ports = new Set(opts.ports.filter((p) => p > 0));
    this.#localAddresses = opts.localAddresses ?? interfaceAddresses;
    this.#clock = opts.clock ?? systemClock;
  }

  /**
   * Whether `uri` (a digest-uri with no user) names this switch: one of its hosts, with no port, the port `req`
   * arrived on or another SIP port of the switch.
   */
  namesSwitch(uri: SipUri, req: SipRequest): boolean {
    if (uri.port !== undefined && uri.port !== req.source?.localPort && !this.#ports.has(uri.port)) return false;
    return this.isSwitchHost(uri.host);
  }

  /** Whether `host` (lower-cased, IPv6 with or without brackets) is a name or address of this switch. */
  isSwitchHost(host: string): boolean {
    const h = bare(host.toLowerCase());
    if (this.#hosts.has(h)) return true;
    // An account's domain: `<label>.<sip.domain>`, or its bare uuid (docs/softphones.md).
    const dot = h.indexOf('.');
    if (this.#domain !== '' && dot > 0 && h.slice(dot + 1) === this.#domain) return true;
    if (dot < 0 && accountOfHost(h) !== undefined) return true;
    return this.#interfaceHosts().has(h);
  }

  #interfaceHosts(): Set<string> {
    const now = this.#clock.now();
    if (!this.#interfaces || now - this.#interfaces.at > INTERFACES_TTL_MS) {
      this.#interfaces = { at: now, hosts: new Set(this.#localAddresses().map((a) => bare(a.toLowerCase()))) };
    }
    return this.#interfaces.hosts;
  }
}

const UNSPECIFIED = new Set(['0.0.0.0', '::']);

/** An IPv6 reference without its brackets and zone (`[fe80::1%eth0]` is `fe80::1`). */
function bare(host: string): string {
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const zone = h.indexOf('%');
  return zone < 0 ? h : h.slice(0, zone);
}

function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .flatMap((i) => (i ? [i.address] : []));
}
