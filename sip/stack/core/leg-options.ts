/**
 * The options of the two legs a user agent makes (createUAC, createUAS), apart from the user agent itself so the
 * B2BUA, which only makes legs, can name them without importing the UserAgent that uses it.
 */
import type { DigestCredentials } from '../auth/digest-client.js';
import type { Dialog } from '../dialog/dialog.js';
import type { HeaderInit, SipResponse } from '../message/index.js';
import type { Target } from '../transport/index.js';

/** Where to send an out-of-dialog request instead of the Request-URI's host: `host:port[;transport=tcp]` or a Target. */
export type Outbound = string | Target;

export interface UacOptions {
  localSdp?: string;
  headers?: HeaderInit;
  from?: string;
  to?: string;
  auth?: DigestCredentials;
  proxy?: Outbound;
  /** Called for each provisional response above 100. */
  onProvisional?: (res: SipResponse) => void;
  /** Called for a 100 Trying (the next hop has the INVITE; failover timers stop on it). */
  onTrying?: () => void;
  /** Aborting sends CANCEL (§9.1); the promise then rejects with SipCanceledError. */
  signal?: AbortSignal;
}

export interface UasOptions {
  localSdp?: string;
  headers?: HeaderInit;
  /** false: no RFC 4028 session timer even if the INVITE asks for one (default: as asked, within Min-SE). */
  sessionTimer?: boolean;
  /**
   * Called as the 200 goes out, before the ACK: the dialog is confirmed from then (RFC 3261 §12.1.1), and requests
   * that name it (a BYE in it, a REFER elsewhere whose Replaces names it) may arrive before the ACK does, or be read
   * in the same turn as the ACK, before the promise's continuation runs. What must know the dialog by then is set
   * up here.
   */
  onConfirmed?: (dialog: Dialog) => void;
}
