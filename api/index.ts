export { createApiServer, createApp, type ApiDeps } from './app.js';
export { ApiError, ValidationError, UnauthorizedError } from './errors.js';
export { turnCredentials, iceServersFor, signRecordingUrl } from './signing.js';
export { totp, hotp, verifyTotp, otpauthUri, base32Encode, base32Decode, newTotpSecret } from './totp.js';
export {
  addPortalUser,
  findPortalUserByEmail,
  checkPassword,
  dummyPasswordHash,
  spendTotp,
  PortalUserError,
  type PortalUserRow,
} from './portal-users.js';
export { openApiDocument } from './openapi.js';
export { callOut, apiKeyOut } from './present.js';
export { RequestRateLimiter, RateLimitedError, type RequestRateLimiterOptions } from './rate-limit.js';
export { securityHeaders } from './security-headers.js';
export { redactingLogger, scrubSecrets } from './log-redaction.js';
export { metricsRoute, METRICS_TOKEN_SETTING } from './routes/metrics.js';
export { feedMetrics } from './metrics-feed.js';
export { addOperator, findOperatorByEmailAddress, spendOperatorTotp } from './operator-users.js';
export {
  OperationError,
  createAccountOp,
  setAccountStatusOp,
  setAccountCapsOp,
  topUpOp,
  liftBanOp,
  setDrainingOp,
  hangupOp,
  type Actor,
  type Caps,
} from './operations.js';
export { chartWindow, chartData, ChartWindowError } from './charts.js';
export { StatsRollup } from './stats-rollup.js';
export { assetOut } from './asset-schemas.js';
