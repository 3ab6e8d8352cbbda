/**
 * The registrar's writes to the store: each end-user's `registration_state` and `last_registered_at`, and its
 * kept UDP registrations (restored after a restart, store/registrations.ts), as the location service has them when
 * the write runs. Writes are grouped: every end-user marked while a write is in flight goes into the next one, one
 * transaction for all of them (group commit), and only one write runs at a time, so a sweep's 'unregistered' and a
 * REGISTER's 'registered' can never land out of order.
 *
 * A change of where a phone is reached (a new or removed contact, another source address, port, flow or token, a
 * state change) is written at once. A refresh that only moves a binding's expiry (the same contact from the same
 * place, the common REGISTER) waits up to `refreshDelayMs` and is written with the others: a crash loses at most
 * that much of refreshes, whose bindings then come back with the expiry they had before (still live: a phone
 * refreshes before its binding expires). close() and settled() write everything pending.
 *
 * A refresh is written in place only over rows the store is known to hold: after a failed write of an end-user
 * (logged), its next write replaces its rows, so contacts the registrar dropped meanwhile leave the store too.
 */
import type { Logger } from '../config/index.js';
import {
  storeNodeId,
  storedPath,
  writeRegistrations,
  type Db,
  type RegistrationRow,
  type RegistrationWrite,
} from '../store/index.js';
import type { Clock, TimerHandle } from './stack/index.js';
import type { Binding, LocationService } from './location.js';

export interface RegisteredUser {
  accountId: string;
  extension: string;
  endUserId: string;
}

export interface RegistrationWriterOptions {
  db: Db;
  location: LocationService;
  clock: Clock;
  logger: Logger;
  /** How long a refresh that changed nothing but its expiry may wait before it is written. */
  refreshDelayMs: number;
}

/** End-users written per transaction (a slice is about 3 ms of the event loop on SQLite). */
const WRITE_SLICE = 128;

interface Pending {
  user: RegisteredUser;
  registeredAt?: string;
  /** Every change marked since the end-user's last write only moved expiries. */
  refresh: boolean;
}

export class RegistrationWriter {
  readonly #o: RegistrationWriterOptions;
  readonly #dirty = new Map<string, Pending>();
  /** End-users whose last write failed: the store may hold rows the registrar no longer keeps. */
  readonly #failed = new Set<string>();
  #urgent = false;
  #timer?: TimerHandle;
  #immediate?: NodeJS.Immediate;
  #flushing?: Promise<void>;

  constructor(opts: RegistrationWriterOptions) {
    this.#o = opts;
  }

  /**
   * The end-user's registration changed; `registeredAt` when it registered (ISO-8601). `urgent` unless the change
   * is a refresh that only moved expiries.
   */
  mark(user: RegisteredUser, opts: { registeredAt?: string; urgent: boolean }): void {
    const prev = this.#dirty.get(user.endUserId);
    this.#dirty.set(user.endUserId, {
      user,
      registeredAt: opts.registeredAt ?? prev?.registeredAt,
      refresh: !opts.urgent && (prev?.refresh ?? true),
    });
    if (opts.urgent) this.#urgent = true;
    this.#schedule();
  }

  /** Resolves when everything marked so far is written (or failed and was logged). */
  async settled(): Promise<void> {
    while (this.#flushing || this.#dirty.size > 0) {
      if (this.#flushing) await this.#flushing;
      else await this.#flush();
    }
  }

  /** Writes what is pending and stops the timers. */
  async close(): Promise<void> {
    await this.settled();
    this.#stopTimers();
  }

  #schedule(): void {
    if (this.#flushing || this.#dirty.size === 0) return;
    if (this.#urgent) {
      // The next turn of the loop: the REGISTERs read in this one are written together.
      this.#immediate ??= setImmediate(() => {
        this.#immediate = undefined;
        void this.#flush();
      });
    } else {
      this.#timer ??= this.#o.clock.setTimeout(() => {
        this.#timer = undefined;
        void this.#flush();
      }, this.#o.refreshDelayMs);
    }
  }

  #stopTimers(): void {
    if (this.#timer) this.#o.clock.clearTimeout(this.#timer);
    if (this.#immediate) clearImmediate(this.#immediate);
    this.#timer = undefined;
    this.#immediate = undefined;
  }

  #flush(): Promise<void> {
    if (this.#flushing) return this.#flushing;
    this.#stopTimers();
    const batch = [...this.#dirty.values()];
    this.#dirty.clear();
    this.#urgent = false;
    if (batch.length === 0) return Promise.resolve();
    this.#flushing = this.#write(batch).finally(() => {
      this.#flushing = undefined;
      this.#schedule();
    });
    return this.#flushing;
  }

  /**
   * Writes the batch a slice at a time, each slice its own transaction, with a turn of the event loop between
   * slices: a refresh batch holds every phone that refreshed in the last second, and written in one go it holds the
   * loop for tens of ms at a busy registrar's rate, which every REGISTER arriving meanwhile waits out.
   */
  async #write(batch: Pending[]): Promise<void> {
    for (let i = 0; i < batch.length; i += WRITE_SLICE) {
      if (i > 0) await new Promise((resolve) => setImmediate(resolve));
      await this.#writeSlice(batch.slice(i, i + WRITE_SLICE));
    }
  }

  async #writeSlice(slice: Pending[]): Promise<void> {
    // The state as the location service has it now, not as it was when marked.
    const writes = slice.map((p) => this.#writeOf(p));
    try {
      await writeRegistrations(this.#o.db, writes);
      for (const w of writes) this.#failed.delete(w.endUserId);
    } catch (err) {
      if (writes.length === 1) {
        this.#notWritten(err, writes[0]!);
        return;
      }
      // One bad end-user must not keep the others from being written: each alone, failures logged.
      for (const w of writes) {
        await writeRegistrations(this.#o.db, [w]).then(
          () => this.#failed.delete(w.endUserId),
          (e: unknown) => this.#notWritten(e, w),
        );
      }
    }
  }

  #notWritten(err: unknown, w: RegistrationWrite): void {
    this.#failed.add(w.endUserId);
    this.#o.logger.warn({ err, endUserId: w.endUserId }, 'registration state not written');
  }

  #writeOf(p: Pending): RegistrationWrite {
    const { accountId, extension, endUserId } = p.user;
    const live = this.#o.location.lookup(accountId, extension);
    const rows = live.filter((b) => b.endUserId === endUserId).map(rowOf);
    return {
      endUserId,
      state: live.length > 0 ? 'registered' : 'unregistered',
      lastRegisteredAt: live.length > 0 ? p.registeredAt : undefined,
      // Every binding is stored, so other nodes know where the phone is; only UDP ones are restored after a restart
      // (stream ones die with their connection).
      rows,
      ...(p.refresh && rows.length > 0 && !this.#failed.has(endUserId) && { refresh: true }),
    };
  }
}

function rowOf(b: Binding): RegistrationRow {
  return {
    end_user_id: b.endUserId,
    contact: b.contact,
    account_id: b.accountId,
    extension: b.extension,
    source_address: b.sourceAddress,
    source_port: b.sourcePort,
    flow_id: b.flowId,
    token_id: b.tokenId,
    call_id: b.callId,
    cseq: b.cseq,
    registered_at: b.registeredAt,
    expires_at: b.expiresAt,
    node_id: storeNodeId(),
    transport: b.transport,
    unreachable_at: null,
    path: b.path && b.path.length > 0 ? JSON.stringify(b.path) : null,
  };
}

/** A kept registration: one restored at start-up (UDP), or another node's UDP one this node reaches too. */
export function bindingOf(r: RegistrationRow): Binding {
  return {
    accountId: r.account_id,
    endUserId: r.end_user_id,
    extension: r.extension,
    contact: r.contact,
    transport: r.transport as Binding['transport'],
    sourceAddress: r.source_address,
    sourcePort: r.source_port,
    flowId: r.flow_id,
    expiresAt: r.expires_at,
    registeredAt: r.registered_at,
    tokenId: r.token_id,
    callId: r.call_id,
    cseq: r.cseq,
    ...(r.path ? { path: storedPath(r.path) } : {}),
  };
}
