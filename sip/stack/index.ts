/**
 * sip/stack: an RFC 3261 SIP protocol library. It knows nothing of accounts, numbers or calls; the switch's
 * SIP applications (sip/) are built on it. It imports nothing else of the project.
 *
 * Usage:
 *
 *   const ua = new UserAgent({ logger, timers: { T1: 500 } });           // clock injectable for tests
 *   await ua.listen({ udp: { host, port }, tcp: { host, port }, tls: { host, port, cert, key },
 *                     ws: { host, port }, wss: { host, port, cert, key } });
 *
 *   ua.onRequest('INVITE', async (req, srv) => {
 *     // req.source = { transport, address, port, flowId }; srv.signal aborts on CANCEL
 *     srv.send(180);
 *     const dialog = await ua.createUAS(req, { localSdp });             // 200 sent, resolves on ACK
 *     dialog.on('bye', () => ...); dialog.remoteSdp; await dialog.request('INFO', { body, contentType });
 *   });
 *   ua.onRequest('REGISTER', async (req, srv) => {
 *     const v = await digest.verify(req, lookupPassword);               // DigestServer, SHA-256 + MD5
 *     if (!v.ok) return srv.send(digest.status, undefined, { headers: digest.challenge({ stale: v.stale }) });
 *     srv.send(200, 'OK', { headers: { Contact: req.headers.get('contact')! } });
 *   });
 *
 *   const dialog = await ua.createUAC('sip:bob@192.0.2.1', { localSdp, auth: { username, password },
 *     proxy: '192.0.2.9:5060;transport=tcp', onProvisional: (res) => ..., signal });   // rejects with SipError
 *   const { uas, uac } = await ua.createB2BUA(req, 'sip:carrier@192.0.2.2', { headers });
 *   const res = await ua.request('sip:host', { method: 'OPTIONS' });    // any final response
 *   ua.address('UDP'); ua.stats();                                      // bound ports; live dialogs/transactions
 *   await ua.close();                                                   // safe twice
 *
 * Errors all extend SipError with a stable `code` and the SIP `status`: SipResponseError (the peer's final
 * status), SipTimeoutError (408), SipTransportError (503), SipCanceledError (487), SipParseError (400/505/513),
 * SipDialogTerminatedError (481), SipStateError (misuse).
 *
 * Behaviour worth knowing: the INVITE server transaction sends 100 Trying itself after 200 ms (§17.2.1) and
 * retransmits a 2xx until its ACK; a request to an unknown dialog gets 481, a lower CSeq 500; unhandled
 * out-of-dialog methods get 405 (OPTIONS 200); validateRequest's 416/420/415/406/483 come before handlers;
 * in-dialog re-INVITE/UPDATE/INFO are answered 200 when the application does not listen for them.
 *
 * Lower layers are exported for tests and tools: the parser (`parseMessage`, pure), `StreamFramer`, the four
 * transaction machines with `ManualClock`, and the RFC 8898 bearer helpers.
 */
export { UserAgent } from './core/user-agent.js';
export type { UserAgentOptions, RequestHandler, RequestOptions } from './core/user-agent.js';
export type { UacOptions, UasOptions, Outbound } from './core/leg-options.js';
export type { B2buaOptions, B2buaLegs } from './core/b2bua.js';
export { Responder, type ResponseOptions } from './core/responder.js';
export { validateRequest, DEFAULT_POLICY, type RequestPolicy, type Rejection } from './core/request-validator.js';
export { Dialog, targetForUri, type DialogEvents, type DialogState } from './dialog/dialog.js';
export {
  parseReferTo,
  parseReplaces,
  dialogMatches,
  sipfrag,
  ReferSubscription,
  MAX_REFER_TO_LENGTH,
  type ReferTo,
  type ReplacesTarget,
} from './dialog/refer.js';
export {
  DigestServer,
  type DigestServerOptions,
  type DigestVerdict,
  type PasswordLookup,
} from './auth/digest-server.js';
export { DigestClient, type DigestCredentials } from './auth/digest-client.js';
export { bearerToken, verifyBearer, bearerChallenge, type BearerVerifier } from './auth/bearer.js';
export * from './errors.js';
export { ManualClock, systemClock, type Clock, type TimerHandle } from './clock.js';
export type { Logger } from './logger.js';
export type {
  ListenOptions,
  Target,
  ConnectionLimits,
  SourceAdmission,
  MessageTap,
  TappedMessage,
  NewInvitePolicy,
} from './transport/index.js';
export { DEFAULT_CONNECTION_LIMITS } from './transport/index.js';
export {
  parseMessage,
  parseUri,
  formatUri,
  parseNameAddr,
  formatNameAddr,
  parseVia,
  StreamFramer,
  SipRequest,
  SipResponse,
  SipHeaders,
  createResponse,
  DEFAULT_LIMITS,
  type HeaderInit,
  type SipMessage,
  type MessageSource,
  type TransportName,
  type Uri,
  type SipUri,
  type NameAddr,
  type Via,
  type ParseLimits,
  type ParseResult,
} from './message/index.js';
export { DEFAULT_TIMER_SETTINGS, deriveTimers, type TimerSettings } from './transaction/index.js';
