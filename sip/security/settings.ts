import { SecuritySettingError } from './errors.js';
import { DEFAULT_SCANNER_USER_AGENTS } from './scanners.js';

/**
 * The gate's settings. Defaults follow common Kamailio practice (pike: a few dozen requests per 2 s sampling unit;
 * ipban: bans of minutes) and fail2ban's asterisk jail (a handful of failures per minute).
 */
export interface SecuritySettings {
  flood: {
    /** More than this many requests from one source inside the window is a flood. */
    maxRequests: number;
    windowSeconds: number;
    banSeconds: number;
  };
  auth: {
    /** More than this many failed authentications from one source inside the window bans the source. */
    maxFailuresPerSource: number;
    sourceWindowSeconds: number;
    banSeconds: number;
    /** More than this many failures for one end-user (account + extension) locks that user's credential... */
    maxFailuresPerUser: number;
    userWindowSeconds: number;
    /** ...for this long, except for addresses that hold a current registration of that user. */
    lockoutSeconds: number;
  };
  scanners: {
    /** Entries as in DEFAULT_SCANNER_USER_AGENTS (`^` anchors at the start). */
    userAgents: readonly string[];
    /** Ban a source after this many scanner requests (0: only drop, never ban). */
    banAfter: number;
    banSeconds: number;
  };
  /** Carrier trunk addresses (IPs or IPv4 CIDR blocks), exempt from every automatic rule. */
  trustedAddresses: readonly string[];
  limits: {
    /** Sources tracked per counter (flood, auth failures, scanner counts). */
    maxTrackedSources: number;
    /** End-users tracked for failures and lockouts. */
    maxTrackedUsers: number;
    maxBans: number;
  };
  /** How often idle counters and ended bans are forgotten. */
  sweepSeconds: number;
  /** How often the ban table is re-read (lifts by the operator take effect within this). */
  pollSeconds: number;
  /** Ended bans are deleted from the table after this long (kept meanwhile for `simu bans list --all`). */
  keepEndedBansSeconds: number;
}

export const DEFAULT_SECURITY_SETTINGS: SecuritySettings = {
  flood: { maxRequests: 30, windowSeconds: 2, banSeconds: 600 },
  auth: {
    maxFailuresPerSource: 10,
    sourceWindowSeconds: 60,
    banSeconds: 600,
    maxFailuresPerUser: 20,
    userWindowSeconds: 60,
    lockoutSeconds: 300,
  },
  scanners: { userAgents: DEFAULT_SCANNER_USER_AGENTS, banAfter: 5, banSeconds: 3600 },
  trustedAddresses: [],
  limits: { maxTrackedSources: 100_000, maxTrackedUsers: 100_000, maxBans: 100_000 },
  sweepSeconds: 10,
  pollSeconds: 3,
  keepEndedBansSeconds: 7 * 86_400,
};

export type SecuritySettingsInput = {
  [K in keyof SecuritySettings]?: SecuritySettings[K] extends readonly string[]
    ? SecuritySettings[K]
    : SecuritySettings[K] extends object
      ? Partial<SecuritySettings[K]>
      : SecuritySettings[K];
};

/** Defaults overlaid with the caller's values, checked: a bad setting fails at start-up, not under attack. */
export function resolveSettings(input: SecuritySettingsInput = {}): SecuritySettings {
  const d = DEFAULT_SECURITY_SETTINGS;
  const s: SecuritySettings = {
    flood: { ...d.flood, ...input.flood },
    auth: { ...d.auth, ...input.auth },
    scanners: { ...d.scanners, ...input.scanners },
    trustedAddresses: input.trustedAddresses ?? d.trustedAddresses,
    limits: { ...d.limits, ...input.limits },
    sweepSeconds: input.sweepSeconds ?? d.sweepSeconds,
    pollSeconds: input.pollSeconds ?? d.pollSeconds,
    keepEndedBansSeconds: input.keepEndedBansSeconds ?? d.keepEndedBansSeconds,
  };
  const positive: Array<[string, number]> = [
    ['flood.maxRequests', s.flood.maxRequests],
    ['flood.windowSeconds', s.flood.windowSeconds],
    ['flood.banSeconds', s.flood.banSeconds],
    ['auth.maxFailuresPerSource', s.auth.maxFailuresPerSource],
    ['auth.sourceWindowSeconds', s.auth.sourceWindowSeconds],
    ['auth.banSeconds', s.auth.banSeconds],
    ['auth.maxFailuresPerUser', s.auth.maxFailuresPerUser],
    ['auth.userWindowSeconds', s.auth.userWindowSeconds],
    ['auth.lockoutSeconds', s.auth.lockoutSeconds],
    ['scanners.banSeconds', s.scanners.banSeconds],
    ['limits.maxTrackedSources', s.limits.maxTrackedSources],
    ['limits.maxTrackedUsers', s.limits.maxTrackedUsers],
    ['limits.maxBans', s.limits.maxBans],
    ['sweepSeconds', s.sweepSeconds],
    ['pollSeconds', s.pollSeconds],
    ['keepEndedBansSeconds', s.keepEndedBansSeconds],
  ];
  for (const [name, v] of positive) {
    if (!Number.isFinite(v) || v <= 0) throw new SecuritySettingError(`${name} must be a positive number, got ${v}`);
  }
  for (const [name, v] of [
    ['flood.maxRequests', s.flood.maxRequests],
    ['auth.maxFailuresPerSource', s.auth.maxFailuresPerSource],
    ['auth.maxFailuresPerUser', s.auth.maxFailuresPerUser],
  ] as const) {
    if (!Number.isInteger(v)) throw new SecuritySettingError(`${name} must be a whole number, got ${v}`);
  }
  if (!Number.isInteger(s.scanners.banAfter) || s.scanners.banAfter < 0) {
    throw new SecuritySettingError(`scanners.banAfter must be a whole number >= 0, got ${s.scanners.banAfter}`);
  }
  return s;
}
