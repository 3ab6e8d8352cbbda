/**
 * A UDP relay on loopback between two SIP peers that loses chosen datagrams by an explicit rule, so tests of
 * retransmission (RFC 3261 §17.1.1.2 Timer A, §17.1.2.2 Timer E, §13.3.1.4 the 2xx resent until its ACK) show
 * the same loss on every run. Random loss (SIPp's `-lost`) was flaky: now and then it also lost the
 * retransmission, and the call outlived the test's timeout.
 *
 * The peer that sends first to `port` is the front peer; everything it sends goes to `target` from a second
 * socket, and everything that comes back to that socket goes to the front peer. Both peers must therefore
 * answer to the source address of what they receive (SIPp's uas does; our stack does for a Via with `rport`,
 * RFC 3581) and put the relay's port where the other side will send in-dialog requests (Contact).
 */
import dgram from 'node:dgram';

/** One SIP datagram seen by the relay. */
export interface RelayedMessage {
  /** `forward`: from the front peer to the target; `back`: from the target to the front peer. */
  direction: 'forward' | 'back';
  /** 0 for the first Call-ID the relay saw, 1 for the second, and so on. */
  call: number;
  /** The method of a request (`INVITE`), or status and CSeq method of a response (`200 INVITE`). */
  kind: string;
  /** 1 for the first copy of this message in its call and direction, 2 for its first retransmission, ... */
  copy: number;
}

/** Says whether a datagram is lost. */
export type LossRule = (m: RelayedMessage) => boolean;

/**
 * A loss rule from an explicit list: `{ 2: ['ACK'], 5: ['INVITE', 'INVITE#2'] }` loses the first ACK of the
 * third call and the first two copies of the sixth call's INVITE (`#n` names the n-th copy).
 */
export function loseListed(list: Record<number, string[]>): LossRule {
  return (m) =>
    (list[m.call] ?? []).some((entry) => entry === `${m.kind}#${m.copy}` || (entry === m.kind && m.copy === 1));
}

const label = (m: RelayedMessage) => `call ${m.call}: ${m.kind}#${m.copy}`;

export class LossyUdpRelay {
  /** Every datagram, in order of arrival, as `call n: KIND#copy`. */
  readonly seen: string[] = [];
  /** The datagrams lost, in order. */
  readonly lost: string[] = [];
  readonly #front = dgram.createSocket('udp4');
  readonly #back = dgram.createSocket('udp4');
  readonly #calls = new Map<string, number>();
  readonly #copies = new Map<string, number>();
  readonly #waiters = new Map<string, () => void>();
  #frontPeer: { address: string; port: number } | undefined;

  private constructor(
    readonly target: { host: string; port: number },
    readonly rule: LossRule,
  ) {}

  /** Binds both sockets on free ports of 127.0.0.1. */
  static async start(target: { host: string; port: number }, rule: LossRule): Promise<LossyUdpRelay> {
    const relay = new LossyUdpRelay(target, rule);
    await Promise.all([relay.#front, relay.#back].map((s) => new Promise<void>((r) => s.bind(0, '127.0.0.1', r))));
    relay.#front.on('message', (msg, from) => {
      relay.#frontPeer = { address: from.address, port: from.port };
      if (relay.#pass(msg, 'forward')) relay.#back.send(msg, target.port, target.host);
    });
    relay.#back.on('message', (msg) => {
      const peer = relay.#frontPeer;
      if (peer && relay.#pass(msg, 'back')) relay.#front.send(msg, peer.port, peer.address);
    });
    return relay;
  }

  /** The port the front peer sends to. */
  get port(): number {
    return this.#front.address().port;
  }

  /** Resolves once a datagram with this label (`call 2: ACK#2`) has been seen, lost or not. */
  until(seen: string, ms = 10000): Promise<void> {
    if (this.seen.includes(seen)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`relay never saw ${seen}; saw ${this.seen.join(', ')}`)), ms);
      this.#waiters.set(seen, () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  close(): void {
    this.#front.close();
    this.#back.close();
  }

  /** Classifies a datagram, logs it and applies the rule; keep-alives and unreadable datagrams pass. */
  #pass(msg: Buffer, direction: RelayedMessage['direction']): boolean {
    const text = msg.toString('latin1');
    const first = /^(\S+) (\S+)/.exec(text);
    const callId = /^(?:Call-ID|i)\s*:\s*(\S+)/im.exec(text)?.[1];
    const cseq = /^CSeq\s*:\s*(\d+)\s+(\S+)/im.exec(text);
    if (!first || !callId || !cseq) return true;
    const kind = first[1] === 'SIP/2.0' ? `${first[2]} ${cseq[2]}` : first[1];
    if (!this.#calls.has(callId)) this.#calls.set(callId, this.#calls.size);
    const key = `${callId} ${direction} ${cseq[1]} ${kind}`;
    const copy = (this.#copies.get(key) ?? 0) + 1;
    this.#copies.set(key, copy);
    const m: RelayedMessage = { direction, call: this.#calls.get(callId)!, kind, copy };
    this.seen.push(label(m));
    this.#waiters.get(label(m))?.();
    this.#waiters.delete(label(m));
    if (!this.rule(m)) return true;
    this.lost.push(label(m));
    return false;
  }
}
