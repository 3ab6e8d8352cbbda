/**
 * User-Agent values sent by SIP scanning and password-guessing tools. Requests carrying one are dropped without a
 * response: any answer (even a 403) tells the scanner a SIP server lives here.
 *
 * Sources: the reqinit route of Kamailio's default configuration (friendly-scanner, sipcli, sipvicious,
 * VaxSIPUserAgent, pplsip), the fail2ban/iptables block lists that Asterisk and OpenSIPS operators share (iWar,
 * sip-scan, sundayddr, SIPArmyKnife, smap, PortSIP VoIP SDK, Nmap NSE, sivus), and the literal
 * `Cisco-SIPGateway/IOS-12.x` that scanners copy from old Cisco examples.
 *
 * Entry syntax: a plain string matches anywhere in the header, case-insensitively; a leading `^` anchors it at the
 * start (for short names like `smap` that could occur inside an honest product name).
 *
 * Careful: a few of these names are also sent by honest equipment. Real Cisco IOS gateways send
 * `Cisco-SIPGateway/IOS-12.x` too, and PortSIP's SDK is inside some softphones. Carrier trunks are exempt from every
 * rule (trusted addresses), and an operator who has such phones can pass their own list.
 */
export const DEFAULT_SCANNER_USER_AGENTS: readonly string[] = [
  'friendly-scanner',
  'friendly-request',
  'sipvicious',
  'sipcli',
  'sip-scan',
  'sipscan',
  'VaxSIPUserAgent',
  'VaxIPUserAgent',
  '^iWar',
  'sundayddr',
  'sundayaddr',
  'SIPArmy', // SIPArmyKnife
  '^PortSIP VoIP SDK',
  '^pplsip',
  '^smap',
  'Cisco-SIPGateway/IOS-12.x',
  'Nmap NSE',
  'sivus',
];

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** One compiled, case-insensitive test for a list of scanner User-Agent entries. */
export class ScannerUserAgents {
  readonly #re: RegExp | undefined;

  constructor(entries: readonly string[] = DEFAULT_SCANNER_USER_AGENTS) {
    const alternatives = entries
      .map((e) => e.trim())
      .filter((e) => e.length > 0 && e !== '^')
      .map((e) => (e.startsWith('^') ? `^\\s*${escape(e.slice(1))}` : escape(e)));
    this.#re = alternatives.length ? new RegExp(alternatives.join('|'), 'i') : undefined;
  }

  /** True when the header names a scanner. A missing header is not evidence of anything. */
  matches(userAgent: string | undefined): boolean {
    if (!userAgent || !this.#re) return false;
    return this.#re.test(userAgent);
  }
}
