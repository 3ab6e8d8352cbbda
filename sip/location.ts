/**
 * The location service (RFC 3261 §10.3): the bindings of each end-user's address-of-record to the contacts its
 * phones registered, in memory, with their expiry; and the per-token call slots that enforce a phone token's
 * `max_concurrent`. It knows nothing of the store: the registrar persists `registration_state` from what
 * `sweep()` and its own writes report.
 */
import type { Clock, TransportName } from './stack/index.js';
import { systemClock } from './stack/index.js';

/** One registered contact of an end-user, with what the call engine needs to reach it. */
export interface Binding {
  accountId: string;
  endUserId: string;
  extension: string;
  /** The Contact URI as the phone sent it (without header parameters). */
  contact: string;
  /** How the REGISTER arrived: requests to this contact go back the same way. */
  transport: TransportName;
  sourceAddress: string;
  sourcePort: number;
  /**
   * The connection the REGISTER arrived on (TCP, TLS, WS, WSS). A WebSocket phone's contact host is made up
   * (`*.invalid`, RFC 7118 §5), so it can only be reached over this flow; over UDP it names the socket.
   */
  flowId: string;
  /** Epoch milliseconds on the service's clock. */
  expiresAt: number;
  registeredAt: number;
  /** The phone token the binding was last authenticated with. */
  tokenId: string;
  /** RFC 3261 §10.3 step 7: a refresh must come with the same Call-ID and a higher CSeq to replace it. */
  callId: string;
  cseq: number;
  /**
   * Registered with RFC 5626 outbound (`;ob` on the Contact URI or reg-id and +sip.instance with Supported: outbound):
   * the phone keeps its flow alive itself, told the interval by Flow-Timer (sip/nat/keep-alive.ts).
   */
  outbound?: boolean;
  /**
   * The REGISTER's Path (RFC 3327), as a trusted front added it (sip/front.ts): requests to this binding carry it
   * as their Route set, first hop first, so they reach the phone through the front that holds its connection.
   */
  path?: string[];
}

/** An end-user left with no binding (the registrar writes it back to `unregistered`). */
export type EmptiedUser = { accountId: string; extension: string; endUserId: string };

/** What one change to an end-user's bindings did. */
export interface BindingChange {
  /** Contacts that did not exist before (first registration of that contact). */
  added: Binding[];
  refreshed: Binding[];
  removed: Binding[];
  /** The end-user's bindings after the change. */
  current: Binding[];
}

export class CallSlotsExhaustedError extends Error {
  readonly code = 'PHONE_TOKEN_MAX_CONCURRENT';
  constructor(
    readonly tokenId: string,
    readonly max: number,
  ) {
    super(`phone token ${tokenId} already has ${max} call(s) in progress`);
    this.name = 'CallSlotsExhaustedError';
  }
}

const aorKey = (accountId: string, extension: string): string => `${accountId}\u0000${extension}`;

export class LocationService {
  readonly #clock: Clock;
  /** aor key -> contact -> binding */
  readonly #byAor = new Map<string, Map<string, Binding>>();
  readonly #slots = new Map<string, number>();

  constructor(opts: { clock?: Clock } = {}) {
    this.#clock = opts.clock ?? systemClock;
  }

  #reachable(b: Binding, now: number): boolean {
    return b.expiresAt > now;
  }

  /** The live bindings of an extension of an account, most recently registered first. */
  lookup(accountId: string, extension: string): Binding[] {
    const now = this.#clock.now();
    const m = this.#byAor.get(aorKey(accountId, extension));
    if (!m) return [];
    return [...m.values()].filter((b) => this.#reachable(b, now)).sort((a, b) => b.registeredAt - a.registeredAt);
  }

  isRegistered(accountId: string, extension: string): boolean {
    return this.lookup(accountId, extension).length > 0;
  }

  /**
   * The IPs holding a live binding of an end-user (account id + extension): the SecurityGate's
   * RegistrationLookup, so a locked-out credential keeps working from phones already registered.
   */
  *addressesFor(account: string, user: string): Iterable<string> {
    for (const b of this.lookup(account, user)) yield b.sourceAddress;
  }

  /** The binding of one contact, live or not yet swept. */
  get(accountId: string, extension: string, contact: string): Binding | undefined {
    return this.#byAor.get(aorKey(accountId, extension))?.get(contact);
  }

  /**
   * Adds or refreshes bindings (expires > 0) and removes the ones with expires 0, in one step. With `maxBindings`,
   * an address-of-record left holding more is trimmed by dropping the bindings that expire soonest (the ones
   * refreshed least recently, as Asterisk's `remove_existing` does), never one this change added or refreshed:
   * a phone that registers anew is not refused because an old phone vanished without unregistering. The dropped
   * ones are reported in `removed`.
   */
  apply(
    accountId: string,
    extension: string,
    upserts: Binding[],
    removals: string[],
    maxBindings = Infinity,
  ): BindingChange {
    const key = aorKey(accountId, extension);
    let m = this.#byAor.get(key);
    if (!m) {
      m = new Map();
      this.#byAor.set(key, m);
    }
    const now = this.#clock.now();
    const change: BindingChange = { added: [], refreshed: [], removed: [], current: [] };
    for (const contact of removals) {
      const old = m.get(contact);
      if (old) {
        m.delete(contact);
        change.removed.push(old);
      }
    }
    for (const b of upserts) {
      const old = m.get(b.contact);
      const live = old && old.expiresAt > now;
      m.set(b.contact, live ? { ...b, registeredAt: old.registeredAt } : b);
      (live ? change.refreshed : change.added).push(b);
    }
    if (m.size > maxBindings) {
      const kept = new Set(upserts.map((b) => b.contact));
      const oldest = [...m.values()].filter((b) => !kept.has(b.contact)).sort((a, b) => a.expiresAt - b.expiresAt);
      for (const b of oldest.slice(0, m.size - maxBindings)) {
        m.delete(b.contact);
        change.removed.push(b);
      }
    }
    if (m.size === 0) this.#byAor.delete(key);
    change.current = this.lookup(accountId, extension);
    return change;
  }

  /** Removes every binding of an extension (`Contact: *`, RFC 3261 §10.3 step 6). */
  removeAll(accountId: string, extension: string): Binding[] {
    const key = aorKey(accountId, extension);
    const m = this.#byAor.get(key);
    this.#byAor.delete(key);
    return m ? [...m.values()] : [];
  }

  /**
   * Forgets expired bindings. Returns the end-users that had bindings and now have none, so the registrar can
   * write `registration_state = 'unregistered'` for them.
   */
  sweep(): EmptiedUser[] {
    const now = this.#clock.now();
    return this.#dropWhere((b) => b.expiresAt <= now);
  }

  /**
   * A connection closed: the bindings registered over it cannot be reached any more (a WebSocket phone's contact
   * host is made up; RFC 5626 §5.3: the flow is the route), so they go at once rather than at expiry. Returns the
   * end-users left with no binding, like sweep().
   */
  dropFlow(flowId: string): EmptiedUser[] {
    return this.#dropWhere((b) => b.flowId === flowId && b.transport !== 'UDP');
  }

  /**
   * Removes one binding if `still(current)` holds for it (it was not replaced meanwhile). Undefined when nothing was
   * removed; else the end-users left with no binding (empty or the one end-user), like sweep().
   */
  dropIf(
    accountId: string,
    extension: string,
    contact: string,
    still: (current: Binding) => boolean,
  ): EmptiedUser[] | undefined {
    const key = aorKey(accountId, extension);
    const m = this.#byAor.get(key);
    const cur = m?.get(contact);
    if (!m || !cur || !still(cur)) return undefined;
    m.delete(contact);
    if (m.size > 0) return [];
    this.#byAor.delete(key);
    return [{ accountId: cur.accountId, extension: cur.extension, endUserId: cur.endUserId }];
  }

  /** The phone tokens the current bindings were authenticated with. */
  tokenIds(): Set<string> {
    const ids = new Set<string>();
    for (const m of this.#byAor.values()) for (const b of m.values()) ids.add(b.tokenId);
    return ids;
  }

  /**
   * Removes every binding authenticated with one of `tokenIds` (revoked or expired tokens, disabled end-users).
   * Returns the end-users left with no binding, like sweep().
   */
  dropTokens(tokenIds: ReadonlySet<string>): EmptiedUser[] {
    return this.#dropWhere((b) => tokenIds.has(b.tokenId));
  }

  /** Removes the bindings `drop` picks; returns the end-users that had bindings and now have none. */
  #dropWhere(drop: (b: Binding) => boolean): EmptiedUser[] {
    const emptied: EmptiedUser[] = [];
    for (const [key, m] of this.#byAor) {
      let last: Binding | undefined;
      for (const [contact, b] of m) {
        if (drop(b)) {
          m.delete(contact);
          last = b;
        }
      }
      if (m.size === 0) {
        this.#byAor.delete(key);
        if (last) emptied.push({ accountId: last.accountId, extension: last.extension, endUserId: last.endUserId });
      }
    }
    return emptied;
  }

  /** How many bindings are held (live or awaiting the sweep). */
  get size(): number {
    let n = 0;
    for (const m of this.#byAor.values()) n += m.size;
    return n;
  }

  // ---- max_concurrent of phone tokens ----
  // The call engine takes a slot when an end-user's call starts (caller side, and callee side when it rings a
  // registered phone) and gives it back when the call ends. The count is per token, in this process.

  /** Calls in progress that hold a slot of this token. */
  activeCallsFor(tokenId: string): number {
    return this.#slots.get(tokenId) ?? 0;
  }

  /** Takes a call slot of the token if fewer than `max` are held; false when the token is at its limit. */
  acquireCallSlot(tokenId: string, max: number): boolean {
    const n = this.activeCallsFor(tokenId);
    if (n >= max) return false;
    this.#slots.set(tokenId, n + 1);
    return true;
  }

  /** Like acquireCallSlot, throwing CallSlotsExhaustedError (code PHONE_TOKEN_MAX_CONCURRENT) at the limit. */
  takeCallSlot(tokenId: string, max: number): void {
    if (!this.acquireCallSlot(tokenId, max)) throw new CallSlotsExhaustedError(tokenId, max);
  }

  /** Gives a slot back; releasing more than was taken is harmless (never below zero). */
  releaseCallSlot(tokenId: string): void {
    const n = this.activeCallsFor(tokenId);
    if (n <= 1) this.#slots.delete(tokenId);
    else this.#slots.set(tokenId, n - 1);
  }
}
