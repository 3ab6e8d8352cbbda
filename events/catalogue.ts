/**
 * The one code catalogue of the platform (spec: Events, "Event catalogue"; Errors, "Terminal reason codes").
 *
 * Every dotted code string of the project is spelled here and only here. Other rooms refer to codes through the
 * named constants `EventCodes.*` and `ReasonCodes.*`, so a typo is a compile error rather than a silent new code.
 */

/** Event codes by the name other rooms use in code. */
export const EventCodes = {
  callInitiated: 'CALL.0100',
  callRinging: 'CALL.0180',
  callProgress: 'CALL.0183',
  callAnswered: 'CALL.0200',
  callCompleted: 'CALL.0300',
  callFailed: 'CALL.0400',
  dialAnswered: 'DIAL.0200',
  dialCompleted: 'DIAL.0300',
  dialBlocked: 'DIAL.0403',
  playAssetMissing: 'PLAY.0404',
  recordingStarted: 'REC.0100',
  recordingCompleted: 'REC.0300',
  ttsGenerated: 'TTS.0200',
  webhookDelivered: 'WH.0200',
  webhookFailed: 'WH.0400',
  phoneAuthorized: 'AUTH.0200',
  phoneRejected: 'AUTH.0401',
  walletDebited: 'BILL.0300',
  walletLow: 'BILL.0310',
  creditWarning: 'BILL.0311', // beyond the spec
  walletInsufficient: 'BILL.0402',
  walletExhausted: 'BILL.0403',
  accountSuspended: 'BILL.0407',
  concurrencyExceeded: 'LIMIT.0429',
  cpsExceeded: 'LIMIT.0430',
  noDid: 'END.0403',
  crossAccount: 'END.0488',
  calleeOffline: 'END.0410',
  noOutboundHandler: 'END.0501',
  platformConcurrent: 'PLATFORM.0001',
  platformDraining: 'PLATFORM.0503',
  systemError: 'SYS.0500',
  // ---- beyond the spec's catalogue (BEYOND_SPEC_EVENT_CODES; docs/api.md, "Codes beyond the spec") ----
  verbAttributeIgnored: 'VERB.0299',
  callRedirected: 'CALL.0210',
  routeAttempt: 'ROUTE.0100',
  trunkState: 'TRUNK.0100',
  mediaEngineState: 'MEDIA.0100',
  gatherStarted: 'GATHER.0100',
  gatherCompleted: 'GATHER.0200',
  queueJoined: 'QUEUE.0100',
  queueBridged: 'QUEUE.0200',
  queueLeft: 'QUEUE.0300',
  streamStarted: 'STREAM.0100',
  streamStopped: 'STREAM.0300',
  streamFailed: 'STREAM.0400',
  callTransferred: 'XFER.0200',
  transferRefused: 'XFER.0403',
  transferFailed: 'XFER.0480',
  callForwarded: 'FWD.0100',
  voicemailLeft: 'VM.0300',
  conferenceStarted: 'CONF.0100',
  conferenceJoined: 'CONF.0110',
  conferenceLeft: 'CONF.0120',
  conferenceEnded: 'CONF.0300',
  machineDetected: 'AMD.0200',
} as const;

export type EventCode = (typeof EventCodes)[keyof typeof EventCodes];

/** Code → event name and the spec's meaning. */
export const EVENT_CATALOGUE = {
  'CALL.0100': { event: 'call.initiated', label: 'Leg created, not yet ringing.' },
  'CALL.0180': { event: 'call.ringing', label: 'Remote party being alerted.' },
  'CALL.0183': { event: 'call.progress', label: 'Early media before answer.' },
  'CALL.0200': { event: 'call.answered', label: 'Answered and bridged; billing has started.' },
  'CALL.0300': { event: 'call.completed', label: 'Ended after connecting; carries reason code, duration, cost.' },
  'CALL.0400': { event: 'call.failed', label: 'Did not complete; carries reason code.' },
  'DIAL.0200': { event: 'dial.answered', label: 'A bridged Dial leg was answered.' },
  'DIAL.0300': { event: 'dial.completed', label: 'A Dial leg ended; carries DialCallStatus and duration.' },
  'DIAL.0403': { event: 'dial.blocked', label: 'Dial blocked by the outbound destination allowlist.' },
  'PLAY.0404': { event: 'play.asset_missing', label: 'A Play named an asset that is absent or unplayable.' },
  'REC.0100': { event: 'recording.started', label: 'Audio capture began.' },
  'REC.0300': { event: 'recording.completed', label: 'A recording finished and its Recording record exists.' },
  'TTS.0200': { event: 'tts.generated', label: 'A Say utterance was synthesised.' },
  'WH.0200': { event: 'webhook.delivered', label: 'A webhook was delivered.' },
  'WH.0400': { event: 'webhook.failed', label: 'A delivery failed after retries, or a fallback fired.' },
  'AUTH.0200': { event: 'phone.authorized', label: 'A phone token was validated and accepted.' },
  'AUTH.0401': { event: 'phone.rejected', label: 'A phone token was expired or revoked.' },
  'BILL.0300': { event: 'wallet.debited', label: 'A usage charge was posted.' },
  'BILL.0310': { event: 'wallet.low', label: 'The allowance is nearing its end on active calls.' },
  'BILL.0311': {
    event: 'call.credit_warning',
    label: "The paying leg of a live call was told its allowance runs out soon (the account's lead time).",
  },
  'BILL.0402': { event: 'wallet.insufficient', label: 'New call refused before answer: no spendable allowance.' },
  'BILL.0403': { event: 'wallet.exhausted', label: 'Call terminated mid-call because the allowance ran out.' },
  'BILL.0407': { event: 'account.suspended', label: 'New call refused: account not active.' },
  'LIMIT.0429': { event: 'call.concurrency_exceeded', label: 'New call refused: simultaneous-call maximum reached.' },
  'LIMIT.0430': { event: 'call.cps_exceeded', label: 'New call refused: calls-per-second limit exceeded.' },
  'END.0403': { event: 'call.no_did', label: 'End-user outbound PSTN call, account owns no active DID.' },
  'END.0488': { event: 'call.cross_account', label: 'End-user dialled an extension of another account.' },
  'END.0410': { event: 'call.callee_offline', label: 'End-user dialled an on-net extension not registered.' },
  'END.0501': { event: 'call.no_outbound_handler', label: 'No outbound voice webhook configured.' },
  'PLATFORM.0001': { event: 'platform.concurrent', label: 'Platform-wide active-call count (staff stream).' },
  'PLATFORM.0503': { event: 'platform.draining', label: 'Call refused: the platform is not admitting new calls.' },
  'SYS.0500': { event: 'system.error', label: 'Internal error handling a call event; carries a traceId.' },
  'CALL.0210': {
    event: 'call.redirected',
    label: 'A live call was moved to new verbs by POST /api/calls/{uuid}/update (source url or twiml).',
  },
  'VERB.0299': {
    event: 'verb.attribute_ignored',
    label: 'A verb document used an attribute Simu does not know; it was ignored (reported once per call).',
  },
  'ROUTE.0100': {
    event: 'route.attempt',
    label:
      'An outbound leg was tried on one trunk of its route list; carries the SIP status and whether it failed over.',
  },
  'TRUNK.0100': {
    event: 'trunk.state',
    label: 'A carrier trunk went up or down (OPTIONS pings, or a 503 with Retry-After) (staff stream).',
  },
  'MEDIA.0100': {
    event: 'media.engine_state',
    label: 'An rtpengine was lost, restarted or came back; carries its health, losses and restarts (staff stream).',
  },
  'GATHER.0100': { event: 'gather.started', label: 'A Gather began listening for keys (or speech).' },
  'GATHER.0200': { event: 'gather.completed', label: 'A Gather ended; carries the digits (and speech) it heard.' },
  'QUEUE.0100': { event: 'queue.joined', label: 'A caller joined a queue (Enqueue); carries the queue and position.' },
  'QUEUE.0200': {
    event: 'queue.bridged',
    label: "A queue's caller was taken by an agent's <Dial><Queue>; carries the queue and seconds waited.",
  },
  'QUEUE.0300': {
    event: 'queue.left',
    label: 'A caller left a queue; carries QueueResult (bridged, hangup, redirected, queue-full, error) and seconds.',
  },
  'STREAM.0100': { event: 'stream.started', label: "A media stream's WebSocket opened (Start or Connect Stream)." },
  'STREAM.0300': { event: 'stream.stopped', label: 'A media stream ended; carries frames sent and frames dropped.' },
  'STREAM.0400': {
    event: 'stream.failed',
    label: "A media stream's WebSocket could not be opened (URL refused, unreachable, handshake); the call goes on.",
  },
  'XFER.0200': {
    event: 'call.transferred',
    label: 'A phone transferred the call (REFER): the other party now talks to the target on a new leg (childSid).',
  },
  'XFER.0403': {
    event: 'transfer.refused',
    label: 'A REFER named a target the account may not reach; carries reason (TransferRefusals); NOTIFY 403/404/480.',
  },
  'XFER.0480': {
    event: 'transfer.failed',
    label: "A transfer's target did not answer or could not be placed; the parties stay as they were.",
  },
  'FWD.0100': {
    event: 'call.forwarded',
    label: 'A call to an end-user went to its forward target (DND, busy, no answer).',
  },
  'VM.0300': {
    event: 'voicemail.left',
    label: "A caller left a message in an end-user's mailbox; its Recording exists.",
  },
  'CONF.0100': {
    event: 'conference.started',
    label: 'A conference began mixing (a participant with startConferenceOnEnter joined); carries its sid and name.',
  },
  'CONF.0110': {
    event: 'participant.joined',
    label: "A call joined a conference (<Dial><Conference>); carries the conference's sid, name and participant count.",
  },
  'CONF.0120': {
    event: 'participant.left',
    label: 'A call left a conference; carries why (hangup, kicked, conference-ended) and the seconds it was in.',
  },
  'CONF.0300': {
    event: 'conference.ended',
    label: 'A conference ended (its last participant left, or one with endConferenceOnExit did); carries its length.',
  },
  'AMD.0200': {
    event: 'call.machine_detection',
    label:
      'Answering machine detection decided who answered a placed call or a number a Dial rang; carries answeredBy, the duration (ms), the reason and the segments heard.',
  },
} as const satisfies Record<EventCode, { event: string; label: string }>;

/**
 * Event codes Simu adds to the spec's catalogue (docs/api.md, "Codes beyond the spec"). Every other code of
 * EVENT_CATALOGUE is the spec's, word for word; test/events/catalogue.test.ts holds both lists apart.
 */
export const BEYOND_SPEC_EVENT_CODES: ReadonlySet<EventCode> = new Set<EventCode>([
  EventCodes.creditWarning,
  EventCodes.verbAttributeIgnored,
  EventCodes.callRedirected,
  EventCodes.routeAttempt,
  EventCodes.trunkState,
  EventCodes.mediaEngineState,
  EventCodes.gatherStarted,
  EventCodes.gatherCompleted,
  EventCodes.queueJoined,
  EventCodes.queueBridged,
  EventCodes.queueLeft,
  EventCodes.streamStarted,
  EventCodes.streamStopped,
  EventCodes.streamFailed,
  EventCodes.callTransferred,
  EventCodes.transferRefused,
  EventCodes.transferFailed,
  EventCodes.callForwarded,
  EventCodes.voicemailLeft,
  EventCodes.conferenceStarted,
  EventCodes.conferenceJoined,
  EventCodes.conferenceLeft,
  EventCodes.conferenceEnded,
  EventCodes.machineDetected,
]);

/** Why a REFER's target was refused (XFER.0403's `reason`; docs/softphones.md, "Transfer"). */
export const TransferRefusals = {
  /** Not a sip/sips/tel URI, or no user part (or one too long). */
  malformed: 'TRANSFER_TARGET_MALFORMED',
  /** A host naming another account, an emergency number, a number the allowlist blocks, no DID to present. */
  notAllowed: 'TRANSFER_TARGET_NOT_ALLOWED',
  /** Not a number, no such active extension in the account, or no route carries the number. */
  unknown: 'TRANSFER_TARGET_UNKNOWN',
  /** The extension exists but no phone of it is registered. */
  offline: 'TRANSFER_TARGET_OFFLINE',
  /** An attended transfer's Replaces names no live call of the account. */
  noDialog: 'TRANSFER_REPLACES_NO_DIALOG',
} as const;
export type TransferRefusal = (typeof TransferRefusals)[keyof typeof TransferRefusals];

export type EventName = (typeof EVENT_CATALOGUE)[EventCode]['event'];

/** Terminal reason codes by the name other rooms use in code. */
export const ReasonCodes = {
  insufficientBalance: 'BILL.0402',
  balanceExhausted: 'BILL.0403',
  accountSuspended: 'BILL.0407',
  concurrencyCap: 'LIMIT.0429',
  cpsLimit: 'LIMIT.0430',
  normalHangup: 'END.0200',
  unallocatedNumber: 'END.0404',
  maxDuration: 'END.0408',
  noAnswer: 'END.0480',
  busy: 'END.0486',
  canceled: 'END.0487',
  watchdogCut: 'END.0503',
  reconciled: 'END.0504',
  carrierFailure: 'END.0500',
  rejected: 'END.0603',
  noDid: 'END.0403',
  crossAccount: 'END.0488',
  extensionOffline: 'END.0410',
  noOutboundHandler: 'END.0501',
  sessionExpired: 'END.0422',
  mediaFailure: 'END.0502',
  nodeStopCut: 'END.0505',
  platformPaused: 'PLATFORM.0503',
  platformFailure: 'SYS.0500',
} as const;

export type ReasonCode = (typeof ReasonCodes)[keyof typeof ReasonCodes];

/** Reason code → outcome label, as stored in a call's `reason_label`. */
export const REASON_LABELS = {
  'BILL.0402': 'Insufficient balance',
  'BILL.0403': 'Balance exhausted mid-call',
  'BILL.0407': 'Account suspended',
  'LIMIT.0429': 'Concurrency cap reached',
  'LIMIT.0430': 'Calls-per-second limit exceeded',
  'END.0200': 'Normal hangup',
  'END.0404': 'Unallocated or inactive number',
  'END.0408': 'Maximum duration reached',
  'END.0480': 'No answer',
  'END.0486': 'Busy',
  'END.0487': 'Canceled before answer',
  'END.0503': 'Enforcement watchdog cut',
  'END.0504': 'Reconciled from the switch',
  'END.0500': 'Carrier or network failure',
  'END.0603': 'Rejected',
  'END.0403': 'No DID to originate from',
  'END.0488': 'Cross-account extension',
  'END.0410': 'Extension offline',
  'END.0501': 'No outbound voice webhook',
  'END.0422': 'Session timer expired: the refresher sent no refresh (RFC 4028)',
  'END.0502': 'Media failure: the media engine was lost and the call could not be restored',
  'END.0505': 'Cut when its node stopped',
  'PLATFORM.0503': 'Platform paused for maintenance',
  'SYS.0500': 'Platform failure',
} as const satisfies Record<ReasonCode, string>;

export interface CatalogueEntry {
  code: EventCode;
  event: EventName;
  label: string;
}

export function isEventCode(code: string): code is EventCode {
  return Object.prototype.hasOwnProperty.call(EVENT_CATALOGUE, code);
}

export function isReasonCode(code: string): code is ReasonCode {
  return Object.prototype.hasOwnProperty.call(REASON_LABELS, code);
}

/** The event name and label of a code. */
export function eventFor(code: EventCode): CatalogueEntry {
  const e = EVENT_CATALOGUE[code];
  return { code, event: e.event, label: e.label };
}

/** The outcome label of a terminal reason code. */
export function reasonLabel(code: ReasonCode): string {
  return REASON_LABELS[code];
}

/** The codes whose events are about a call and end it; their stream `data` carries reasonCode, duration, cost. */
export const TERMINAL_CALL_EVENTS: ReadonlySet<EventCode> = new Set<EventCode>([
  EventCodes.callCompleted,
  EventCodes.callFailed,
]);

/**
 * Final SIP status of the dialled leg → terminal reason code (RFC 3261 §21 classes):
 * 486 Busy Here and 600 Busy Everywhere → busy; 480 Temporarily Unavailable and 408 Request Timeout → no answer (the far end rang out or
 * never answered); 487 Request Terminated → canceled; 404 Not Found and 604 Does Not Exist Anywhere → unallocated;
 * 603 Decline → rejected; any other 5xx → carrier or network failure; a 2xx (a connected call that ended normally)
 * → normal hangup. Other 4xx/6xx have no dedicated outcome in the spec and count as carrier failure.
 */
export function reasonForSipStatus(status: number): ReasonCode {
  if (status >= 200 && status < 300) return ReasonCodes.normalHangup;
  switch (status) {
    case 486:
    case 600:
      return ReasonCodes.busy;
    case 480:
    case 408:
      return ReasonCodes.noAnswer;
    case 487:
      return ReasonCodes.canceled;
    case 404:
    case 604:
      return ReasonCodes.unallocatedNumber;
    case 603:
      return ReasonCodes.rejected;
    default:
      return ReasonCodes.carrierFailure;
  }
}
