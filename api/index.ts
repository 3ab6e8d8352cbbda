export { createApiServer, createApp, type ApiDeps } from './app.js';
export { NullCallEngine, type CallEngine } from './call-engine.js';
export { ApiError, ValidationError, UnauthorizedError } from './errors.js';
export { turnCredentials, iceServersFor, signRecordingUrl } from './signing.js';
export { openApiDocument } from './openapi.js';
export { callOut, apiKeyOut } from './present.js';
export { RequestRateLimiter, RateLimitedError, type RequestRateLimiterOptions } from './rate-limit.js';
export { securityHeaders } from './security-headers.js';
export { redactingLogger, scrubSecrets } from './log-redaction.js';
