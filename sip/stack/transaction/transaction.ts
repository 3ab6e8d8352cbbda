/**
 * The abstract transaction (RFC 3261 §17): a string-enum state, one `transition()` that refuses illegal moves,
 * named timers, and a channel to send through. The four machines extend it.
 */
import type { Clock, TimerHandle } from '../clock.js';
import { SipStateError, SipTransportError } from '../errors.js';
import type { SipMessage, SipRequest, SipResponse } from '../message/index.js';
import { timersFor, type TimerSettings, type TransactionTimers } from './timers.js';

export enum TransactionState {
  Calling = 'calling',
  Trying = 'trying',
  Proceeding = 'proceeding',
  Accepted = 'accepted',
  Completed = 'completed',
  Confirmed = 'confirmed',
  Terminated = 'terminated',
}

/** Where a transaction's messages go: to its peer over one transport. */
export interface MessageChannel {
  readonly reliable: boolean;
  send(message: SipMessage): Promise<void>;
}

/** The transaction user (§17: the layer above) of a client transaction. */
export interface ClientTransactionUser {
  onResponse(response: SipResponse): void;
  /** Timer B or F fired. */
  onTimeout(): void;
  onTransportError(error: SipTransportError): void;
}

/** The transaction user of a server transaction. */
export interface ServerTransactionUser {
  onTransportError(error: SipTransportError): void;
  /** An INVITE server transaction: the ACK for a 2xx never came (Timer L, RFC 3261 §13.3.1.4); the TU should BYE. */
  onAckTimeout?(): void;
}

export interface TransactionContext {
  clock: Clock;
  timers: TimerSettings;
  channel: MessageChannel;
  /** Called once when the transaction reaches Terminated, so the layer can forget it. */
  onTerminated: (tx: Transaction) => void;
  /**
   * Where a non-INVITE server transaction over an unreliable transport leaves its Completed state (the final
   * response's bytes, answering retransmissions until Timer J) to end at once; without it, it waits out J itself.
   * An INVITE transaction leaves its acknowledged Accepted state there too (until Timer L or M).
   */
  completed?: CompletedKeeper;
}

/** Keeps transactions that only wait out a timer by their key (completed-responses.ts). */
export interface CompletedKeeper {
  /** Sends `bytes`, the final response of transaction `key`, and answers its retransmissions with them until J. */
  add(key: string, bytes: Buffer, channel: MessageChannel): void;
  /**
   * Keeps transaction `key` until `until` (clock time): each retransmission runs `answer` (given a response that
   * came again), or is absorbed.
   */
  keep(key: string, until: number, answer?: (res: SipResponse) => void): void;
}

/** What every transaction user takes: the transport failed under the transaction (§17.1.4, §17.2.4). */
export interface TransactionUser {
  onTransportError(error: SipTransportError): void;
}

export abstract class Transaction<U extends TransactionUser = TransactionUser> {
  readonly id: string;
  readonly request: SipRequest;
  #state: TransactionState;
  readonly #handles = new Map<string, TimerHandle>();
  protected readonly ctx: TransactionContext;
  protected readonly t: TransactionTimers;

  protected abstract readonly transitions: Readonly<Partial<Record<TransactionState, readonly TransactionState[]>>>;

  protected constructor(
    id: string,
    request: SipRequest,
    initial: TransactionState,
    ctx: TransactionContext,
    /** The layer above, told what the transaction's state machine decides. */
    protected readonly user: U,
  ) {
    this.id = id;
    this.request = request;
    this.#state = initial;
    this.ctx = ctx;
    this.t = timersFor(ctx.timers, ctx.channel.reliable);
  }

  get state(): TransactionState {
    return this.#state;
  }

  get reliable(): boolean {
    return this.ctx.channel.reliable;
  }

  protected transition(to: TransactionState): void {
    if (this.#state === to) return;
    if (!this.transitions[this.#state]?.includes(to)) {
      throw new SipStateError(`${this.constructor.name}: illegal move ${this.#state} -> ${to}`);
    }
    this.#state = to;
    if (to === TransactionState.Terminated) {
      for (const h of this.#handles.values()) this.ctx.clock.clearTimeout(h);
      this.#handles.clear();
      this.ctx.onTerminated(this);
    }
  }

  protected startTimer(name: string, ms: number, fire: () => void): void {
    this.stopTimer(name);
    this.#handles.set(
      name,
      this.ctx.clock.setTimeout(() => {
        this.#handles.delete(name);
        fire();
      }, ms),
    );
  }

  protected stopTimer(name: string): void {
    const h = this.#handles.get(name);
    if (h) {
      this.ctx.clock.clearTimeout(h);
      this.#handles.delete(name);
    }
  }

  /** Sends and turns a failure into a transport error for the TU (§17.1.4, §17.2.4), then terminates. */
  protected transmit(message: SipMessage): void {
    this.ctx.channel.send(message).catch((err: unknown) => {
      if (this.#state === TransactionState.Terminated) return;
      const e = err instanceof SipTransportError ? err : new SipTransportError(String(err), { cause: err });
      this.transition(TransactionState.Terminated);
      this.user.onTransportError(e);
    });
  }

  /** Ends the transaction at once (stack shutdown). */
  terminate(): void {
    if (this.#state !== TransactionState.Terminated) {
      this.#state = TransactionState.Terminated;
      for (const h of this.#handles.values()) this.ctx.clock.clearTimeout(h);
      this.#handles.clear();
      this.ctx.onTerminated(this);
    }
  }
}
