export {
  SipApplication,
  NODE_LEG_HEADER,
  type InviteOrigin,
  type InviteHandler,
  type EndUserIdentity,
  type EndUserAuthenticator,
} from './sip-app.js';
export {
  TrunkDirectory,
  addressMatches,
  trunkTarget,
  type TrunkRoute,
  type OutboundPlan,
  type TrunkDirectoryOptions,
} from './trunks.js';
export {
  TrunkRouteTable,
  EMERGENCY_PREFIX,
  perMinute,
  type RoutePlan,
  type PlannedRoute,
  type SkippedRoute,
} from './routing.js';
export {
  TrunkHealth,
  DEFAULT_TRUNK_HEALTH,
  type TrunkHealthSettings,
  type TrunkStateChange,
  type TrunkPinger,
} from './trunk-health.js';
export { UpstreamRegistrations, REGISTER_BACKOFF, type RegistrationChange } from './upstream-registration.js';
export {
  Registrar,
  DEFAULT_REGISTRAR_SETTINGS,
  type RegistrarOptions,
  type RegistrarSettings,
  type PhoneEventSink,
} from './registrar.js';
export { LocationService, CallSlotsExhaustedError, type Binding, type BindingChange } from './location.js';
export { shortPassword, accountOfHost } from './registrar-credentials.js';
export { EndUserAuth, type EndUserAuthOptions, type EndUserAuthSettings } from './end-user-auth.js';
export { ensureSipCertificate } from './certificate.js';
export { pathNextHop } from './front.js';
export { MessageWaiting, messageSummary, MWI_LIMITS } from './message-waiting.js';
export { SecurityGate, knexBanStore, listBans, liftBan, addBan, type BanRow } from './security/index.js';
export {
  signPhoneToken,
  verifyPhoneToken,
  PhoneTokenRejectedError,
  type PhoneTokenClaims,
  type PhoneTokenRejection,
} from './phone-token.js';
export {
  SipCapture,
  HepSender,
  sipTraceToken,
  writePcap,
  encodeHep3,
  HEP_CHUNK,
  type CaptureFigures,
  type CapturedMessage,
  type HepMessage,
} from './capture/index.js';
