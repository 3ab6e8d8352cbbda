export {
  openDb,
  migrate,
  pingDb,
  isPostgres,
  inTransaction,
  groupCommitStats,
  timeStatements,
  flushGroupCommit,
  sqlOf,
  type Db,
  type Tx,
  type Sql,
  type DbOptions,
} from './db.js';
// The bans table, as one namespace: sip/security wraps it with address checks under the same names (addBan ...).
export * as bansTable from './bans.js';
export { newId, nowIso, sha256Hex, randomToken, newCallSid, Uuid7Generator } from './ids.js';
export { NotFoundError, ConflictError, StoreError, isUniqueViolation } from './errors.js';
export * from './accounts.js';
export * from './sip-domains.js';
export * from './api-keys.js';
export * from './numbers.js';
export * from './trunks.js';
export * from './routes.js';
export * from './rates.js';
export * from './platform.js';
export * from './calls.js';
export { indexCallsSearch, callsSearchBacklog, startCallsSearchIndexer } from './calls-search.js';
export { ensureLiveCallTriggers } from './live-calls.js';
export * from './cdr-export.js';
export * from './recordings.js';
export * from './end-users.js';
export * from './voicemail.js';
export * from './phone-tokens.js';
export * from './stream-tokens.js';
export * from './web-sessions.js';
export * from './idempotency-keys.js';
export * from './wallet-transactions.js';
export { settleCappedDebitsOnPg, type PgSettlement } from './pg-settlement.js';
export * from './assets.js';
export * from './recording-retention.js';
export * from './destination-rules.js';
export * from './registrations.js';
export * from './portal-users.js';
export * from './call-events.js';
export * from './webhook-routes.js';
export * from './call-credit.js';
export * from './admissions.js';
export * from './event-outbox.js';
export { Housekeeping, sweepExpiredRows, type SweptRows } from './housekeeping.js';
export * from './operators.js';
export * from './call-stats.js';
export * from './call-timeline.js';
export { openReadPool } from './db.js';
export { probeStoreQueue, type StoreQueueProbe, type StoreQueueSample } from './queue-probe.js';
export * from './wallet-topups.js';
export * from './last-good-documents.js';
export {
  backupSqliteStore,
  restoreSqliteStore,
  sqliteStoreFile,
  processesHolding,
  type BackupResult,
  type RestoreResult,
} from './backup.js';
export { pendingMigrations } from './migration-status.js';
export {
  writeNodeHeartbeat,
  beatNode,
  listNodes,
  findNode,
  claimGoneNodes,
  markNodeStopped,
  type NodeRow,
  type NodeState,
} from './nodes.js';
export { setStoreNodeId, storeNodeId } from './node-identity.js';
export {
  takeRoomLease,
  releaseRoomLease,
  releaseNodeLeases,
  nodeSecret,
  type RoomKind,
  type RoomHolder,
} from './room-leases.js';
export {
  openNodeChannel,
  COMMANDS_CHANNEL,
  REPLIES_CHANNEL,
  EVENTS_CHANNEL,
  type NodeLink,
  type NodeMessage,
  type NodeChannelName,
} from './node-channel.js';
