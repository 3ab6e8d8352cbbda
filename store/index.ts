export { openDb, migrate, pingDb, isPostgres, type Db, type DbOptions } from './db.js';
export { newId, nowIso, sha256Hex, randomToken, newCallSid } from './ids.js';
export { NotFoundError, ConflictError, isUniqueViolation } from './errors.js';
export * from './accounts.js';
export * from './api-keys.js';
export * from './numbers.js';
export * from './trunks.js';
export * from './rates.js';
export * from './platform.js';
