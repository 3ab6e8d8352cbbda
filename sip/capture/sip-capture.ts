/**
 * SIP capture: the stack's message tap (sip/stack/transport/tap.ts) feeds the calls' ladders (sip-ladder.ts) and,
 * when a collector is configured, HEP (hep-sender.ts). A message belongs to a call through its Call-ID's group
 * (call-groups.ts): a group opens with an out-of-dialog INVITE received, and the handling of each received message
 * runs in its group's async context, so an out-of-dialog INVITE sent from there (a B leg) joins it. The call engine
 * names the group's call (`claim`) when it makes the call's row, within that same context.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import net from 'node:net';
import { deriveKey } from '../../kit/index.js';
import type { MessageTap, TappedMessage } from '../stack/index.js';
import { CallGroups, type CallGroup } from './call-groups.js';
import type { HepFigures, HepSender } from './hep-sender.js';
import { readHead } from './message-head.js';
import { SipLadder, type CapturedMessage } from './sip-ladder.js';

/** The ladder's memory bound: this many bytes a message on average (a call's messages are ~0.5-1.5 KB). */
const BYTES_PER_MESSAGE = 2048;
/** Call-IDs followed at most (each has at least one message; beyond, the least recently seen are forgotten). */
const MAX_CALL_IDS = 200_000;

export interface SipCaptureOptions {
  /** Messages kept for ladders (0: none) and how long after a Call-ID's last one. */
  ladderMessages: number;
  ladderMinutes: number;
  hep?: HepSender;
  /** Written as this end's address when a transport listens on a wildcard one (0.0.0.0, ::). */
  advertisedAddress?: string;
}

export interface CaptureFigures {
  hep: HepFigures | undefined;
  ladderMessages: number;
  ladderBytes: number;
}

export class SipCapture {
  readonly #context = new AsyncLocalStorage<CallGroup | undefined>();
  readonly #groups: CallGroups;
  readonly #ladder: SipLadder;
  readonly #hep: HepSender | undefined;
  readonly #advertised: string;

  constructor(opts: SipCaptureOptions) {
    const maxAgeMs = opts.ladderMinutes * 60_000;
    this.#groups = new CallGroups({ maxIdleMs: maxAgeMs, maxCallIds: MAX_CALL_IDS });
    this.#ladder = new SipLadder({
      maxMessages: opts.ladderMessages,
      maxBytes: opts.ladderMessages * BYTES_PER_MESSAGE,
      maxAgeMs,
    });
    this.#hep = opts.hep;
    const a = opts.advertisedAddress ?? '';
    this.#advertised = net.isIP(a) ? a : '127.0.0.1';
  }

  /** Whether anything is captured at all (else the stack is given no tap). */
  static wanted(o: { ladderMessages: number; hep?: unknown }): boolean {
    return o.ladderMessages > 0 || o.hep !== undefined;
  }

  readonly tap: MessageTap = (m) => {
    const head = readHead(m.data);
    const { callId } = head;
    let group = callId === undefined ? undefined : this.#groups.seen(callId, m.at);
    if (callId !== undefined && !group && head.opensLeg) {
      // A received INVITE opens a call; one sent while handling a call's message is a leg of that call.
      const current = m.direction === 'out' ? this.#context.getStore() : undefined;
      if (m.direction === 'in' || current) group = this.#groups.add(callId, m.at, current);
    }
    // What the switch does on this message (and the promises it starts) runs in its call's context. Entered only
    // when that changes anything: the first enterWith turns on the process's async-context tracking (a hook on
    // every promise), which a switch that has only seen messages of no call (registrations) need not pay.
    if (m.direction === 'in' && (group !== undefined || this.#context.getStore() !== undefined))
      this.#context.enterWith(group);
    const local = isWildcard(m.localAddress) ? this.#advertised : m.localAddress;
    if (group && callId !== undefined) {
      const out = m.direction === 'out';
      this.#ladder.add({
        at: m.at,
        direction: m.direction,
        transport: m.transport,
        srcAddress: out ? local : m.remoteAddress,
        srcPort: out ? m.localPort : m.remotePort,
        dstAddress: out ? m.remoteAddress : local,
        dstPort: out ? m.remotePort : m.localPort,
        callId,
        startLine: head.startLine,
        data: copyIfShared(m.data),
      });
    }
    this.#hep?.enqueue(m, () => group?.sid, local);
  };

  /**
   * Names the call whose messages are being handled (its row was just made): the group of the current context, or
   * (a call the API places, before any leg) a new one that the legs it sends from this context join.
   */
  claim(id: string, sid: string): void {
    let group = this.#context.getStore();
    if (!group) {
      group = this.#groups.add(`claim:${id}`, nowMs());
      this.#context.enterWith(group);
    }
    this.#groups.claim(group, id, sid);
  }

  /** A call's SIP messages, its legs' and its child legs', in order; undefined when none are kept. */
  ladder(callIdOrSid: string): CapturedMessage[] | undefined {
    const group = this.#groups.ofCall(callIdOrSid);
    if (!group) return undefined;
    return this.#ladder.messages(group.callIds, nowMs());
  }

  figures(): CaptureFigures {
    return { hep: this.#hep?.figures(), ladderMessages: this.#ladder.size, ladderBytes: this.#ladder.bytes };
  }

  async close(): Promise<void> {
    await this.#hep?.close();
  }
}

/**
 * The bearer token `simu trace` shows the switch (GET /console/api/calls/ID/sip): derived from the data directory's
 * server secret, so whoever may read that directory may read captures, and nobody else without a console session.
 */
export function sipTraceToken(secret: string): string {
  return deriveKey(secret, 'sip-trace').toString('base64url');
}

function isWildcard(address: string): boolean {
  return address === '' || address === '0.0.0.0' || address === '::' || address === '::ffff:0.0.0.0';
}

/** A message framed from a larger read shares that read's memory: the ladder keeps a copy of its own. */
function copyIfShared(data: Buffer): Buffer {
  return data.byteOffset === 0 && data.buffer.byteLength === data.length ? data : Buffer.from(data);
}

function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

export type { TappedMessage };
