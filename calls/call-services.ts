import type { Config, Logger } from '../config/index.js';
import type { Admission } from '../billing/index.js';
import type { EventPublisher } from '../events/index.js';
import type { MediaService } from '../media/index.js';
import type { SipApplication } from '../sip/index.js';
import type { Target } from '../sip/stack/index.js';
import type { AssetAudioSource, CallRow, Db } from '../store/index.js';
import type { VerbRegistry } from '../verbs/index.js';
import type { Clock, UrlPolicy } from '../kit/index.js';
import type { CallBilling } from './call-billing.js';
import type { CallLifecycle } from './call-lifecycle.js';
import type { LastGoodDocuments } from './prepaid/last-good-documents.js';
import type { QueueRegistry } from './queue/queue-registry.js';
import type { QueueNodes } from './queue/node-queue.js';
import type { SpeechInput } from './speech-input.js';

/** A registered contact of an end-user, as the location service holds it. */
export interface ContactBinding {
  contact: string;
  target: Target;
  /** The binding's Path (RFC 3327): the Route set of requests to it, through the front holding its connection. */
  route?: string[];
}

/** The location service as the call engine sees it (sip/location.ts). */
export interface EndUserLocator {
  /** This node's bindings, and (several nodes) other nodes' that this node reaches (docs/architecture.md). */
  lookup(accountId: string, extension: string): ContactBinding[] | Promise<ContactBinding[]>;
  /** A phone token's `max_concurrent`: false when the token already has that many calls up. */
  acquireCallSlot?(tokenId: string, max: number): boolean;
  releaseCallSlot?(tokenId: string): void;
}

/**
 * What the calls room's parts use, built once by the engine (SwitchCallEngine) and handed down with each call:
 * a flow, a live call, its verbs and its queues and streams read their dependencies here, none copies them.
 */
export interface CallServices {
  readonly db: Db;
  readonly config: Config;
  readonly log: Logger;
  readonly media: MediaService;
  readonly sip: SipApplication;
  readonly events: EventPublisher;
  readonly admission: Admission;
  /** The kit's system clock unless a test moves its own (a ManualClock). */
  readonly clock: Clock;
  /** Where call-control, action, Redirect, stream and callback URLs may point (kit/url-policy.ts). */
  readonly urlPolicy: UrlPolicy;
  /** How long a call-control request may take (config webhooks.timeoutMs). */
  readonly webhookTimeoutMs: number;
  /** Days a recording is kept before the retention job deletes its media. */
  readonly recordingRetentionDays: number;
  /** Credit control; absent in set-ups without it. */
  readonly billing?: CallBilling;
  /** Registered end-users' contacts (sip/location.ts); without it end-user calls are refused with 503. */
  readonly locator?: EndUserLocator;
  /** Where assets not kept locally are fetched from (s3); local assets need nothing. */
  readonly assetStorage?: AssetAudioSource;
  /** The recogniser for Gather input="speech" (calls/speech-input.ts); absent: a speech Gather hears nothing. */
  readonly speech?: SpeechInput;
  /** This process's call queues (Enqueue, Dial Queue); absent: those verbs end with QueueResult error. */
  readonly queues?: QueueRegistry;
  /** On nodes sharing a PostgreSQL store: the node holding each queue, and the legs to it (queue/node-queue.ts). */
  readonly queueNodes?: QueueNodes;
  /** The last known good call-control documents (calls/prepaid/last-good-documents.ts); absent: never used. */
  readonly lastGood?: LastGoodDocuments;
  /** The classes that run each verb; VERB_REGISTRY unless a test injects a failing one. */
  readonly verbRegistry?: () => VerbRegistry;
  /** The lifecycle of a call written to the store: the one place a CallLifecycle is built. */
  lifecycle(row: CallRow): CallLifecycle;
}

/** The services of a switch with a location service: end-user calls and transfers need one. */
export type LocatingServices<S extends CallServices> = S & { readonly locator: EndUserLocator };

export function hasLocator<S extends CallServices>(s: S): s is LocatingServices<S> {
  return s.locator !== undefined;
}
