/**
 * sip/security: the SIP edge's flood, brute-force and scanner defences. The switch's SIP applications put a
 * SecurityGate in front of every incoming request; the registrar reports authentication outcomes to it and uses
 * the digest equaliser so unknown users and wrong passwords look alike. See docs/security.md.
 */
export {
  SecurityGate,
  type SecurityGateOptions,
  type IncomingRequest,
  type GateDecision,
  type AuthEvent,
  type AuthFailureOutcome,
  type RegistrationLookup,
  type SecurityStats,
} from './gate.js';
export {
  DEFAULT_SECURITY_SETTINGS,
  resolveSettings,
  type SecuritySettings,
  type SecuritySettingsInput,
} from './settings.js';
export { DEFAULT_SCANNER_USER_AGENTS, ScannerUserAgents } from './scanners.js';
export { type BanStore, type BanRecord, type BanReason } from './ban-list.js';
export { knexBanStore, listBans, liftBan, addBan, type BanRow } from './ban-store.js';
export {
  verifyDigestResponse,
  equaliseAuthFailure,
  withDummySecret,
  dummySecret,
  expectedDigestResponse,
  type DigestCredentials,
  type DigestSecret,
} from './digest-equaliser.js';
export { systemClock, type SecurityClock } from './clock.js';
export { sourceKey, TrustedAddresses } from './address.js';
export { SecurityError, SecuritySettingError, BadAddressError } from './errors.js';
export { checkDigestAuth } from './digest-check.js';
