/**
 * The message tap: every SIP message the transport layer receives or sends, as its bytes on the wire, with both
 * ends' addresses, for capture (a ladder, HEP to Homer). The stack knows nothing of what the tap does with them.
 */
import type { TransportName } from '../message/index.js';

export interface TappedMessage {
  direction: 'in' | 'out';
  transport: TransportName;
  /** The message's bytes as received (one datagram or one framed message) or as sent. */
  data: Buffer;
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
  /** When it was received or handed to the transport: Unix epoch milliseconds, with a fraction (microseconds). */
  at: number;
}

/**
 * Called synchronously for each message, an inbound one before it is parsed and dispatched: it must be cheap and must
 * not throw (a throw is swallowed). STUN and CRLF keep-alives are not SIP messages and are not tapped.
 */
export type MessageTap = (message: TappedMessage) => void;

/** Epoch milliseconds with microseconds (Date.now() has milliseconds only). */
export function tapTime(): number {
  return performance.timeOrigin + performance.now();
}
