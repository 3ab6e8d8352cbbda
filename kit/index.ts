/**
 * The shared kit beside the leaves (ARCHITECTURE: "a tiny shared kit ... may sit beside them"): imports nothing of
 * the project, so every room may use it.
 *
 * Outbound requests to customer-chosen URLs (docs/security.md "Outbound URLs"):
 *
 *   const policy = new UrlPolicy({ allowPrivate: config.webhooks.allowPrivate });
 *   const fetchOut = createGuardedFetch({ policy });
 *   const res = await fetchOut(url, { method: 'POST', body, redirect: 'manual', signal });
 *
 * `policy.check(address)` and `literalUrlVerdict(url, policy)` answer without any network: the second is for the
 * API edge, which can refuse a URL whose host is a refused literal address before storing it.
 */
export {
  UrlPolicy,
  classifyAddress,
  parseAddress,
  literalUrlVerdict,
  PRIVATE_CLASSES,
  type AddressClass,
  type AddressVerdict,
  type UrlPolicyOptions,
} from './url-policy.js';
export { deriveKey } from './derive-key.js';
export {
  createGuardedFetch,
  guardedRequest,
  OutboundUrlError,
  ReplyTooLargeError,
  resolveAllowed,
  type GuardedReply,
  type GuardedRequestInit,
  type ReplyHeaders,
  type Pinned,
  type OutboundUrlErrorCode,
  type GuardedFetch,
  type GuardedFetchOptions,
} from './guarded-fetch.js';
export { requestUrl } from './request-url.js';
export { systemClock, ManualClock, type Clock, type Periodic, type TimerHandle } from './clock.js';
export { sleep } from './sleep.js';
export { widenReceiveBuffer, WIDE_RECEIVE_BUFFER } from './udp-buffer.js';
export { Fifo } from './fifo.js';
export { TurnBatch } from './turn-batch.js';
export { PeriodicJob } from './periodic-job.js';
export { TokenBucket, TOKEN_BUCKET_MODULE } from './token-bucket.js';
export { RandomPool } from './random-pool.js';
export { detached } from './detached.js';
export { ABORTED, TIMED_OUT, abortQuietly } from './abort.js';
export { roomLogger, setLogLevel, replaceRootLogger, type Logger } from './logger.js';
export { TypedEmitter, type ListenerErrorLog } from './typed-emitter.js';
