import { randomUUID } from 'node:crypto';
import { roomLogger, type Logger } from '../config/index.js';
import { ReasonCodes } from '../events/index.js';
import {
  COMMANDS_CHANNEL,
  REPLIES_CHANNEL,
  findCallAnyAccount,
  findNode,
  listNodes,
  type NodeRow,
  type CallRow,
  type Db,
  type NodeLink,
  type NodeMessage,
} from '../store/index.js';
import type { InterpreterStart } from '../verbs/index.js';
import type { CallControlOutcome, CallEngine, OriginateOptions } from './call-engine.js';
import type { ConferenceControl } from './conference/index.js';
import type { QueueDirectory } from './queue/queue-registry.js';

/** How long a node waits for the node holding a call to answer a command. */
export const COMMAND_TIMEOUT_MS = 3000;

/** What the API may ask of another node's conference and queue rooms (their ConferenceControl, QueueDirectory). */
const ROOM_METHODS = {
  conferences: ['list', 'find', 'participants', 'update', 'kick'],
  queues: ['list', 'members', 'dequeueToUrl'],
} as const;
type Room = keyof typeof ROOM_METHODS;

/** A command for the node holding a call or a room; small (ids, a URL or a verb document) as NOTIFY wants it. */
export type NodeCommand =
  | { verb: 'hangup'; callId: string }
  | { verb: 'redirect'; callId: string; to: InterpreterStart; source: 'url' | 'twiml' }
  | { verb: 'digits'; callId: string; digits: string }
  | { verb: 'room'; room: Room; method: string; args: unknown[] };

/** The owner's answer: an outcome (a room's result), or why the command could not run. */
export type NodeReply = { outcome: CallControlOutcome } | { result: unknown } | { error: 'unknown_call' | 'failed' };

/** The node holding the call did not answer in time: the request may be tried again. */
export class NodeUnreachableError extends Error {
  readonly status = 503;
  readonly code = ReasonCodes.platformPaused;
  readonly retryAfterSeconds = 1;
  constructor(node: string) {
    super(`The node holding this call (${node}) did not answer in time; try again`);
  }
}

export interface NodeRoutingOptions {
  db: Db;
  link: NodeLink;
  /** This node's engine: it runs the commands it receives and those for calls it holds. */
  local: CallEngine;
  /** A node silent this long is gone (its calls are closed as the takeover closes them). */
  goneAfterMs: number;
  timeoutMs?: number;
  now?: () => number;
  logger?: Logger;
}

/**
 * The API's call engine when nodes share a PostgreSQL store (docs/architecture.md, "Several nodes"): a hangup,
 * redirect or keys for a call another node holds (its `node_id`) is sent to that node (NOTIFY on simu_commands),
 * which runs it on its own engine and replies (simu_replies); the answer is the one a local call gets. A call whose
 * node is gone, stopped or silent for `goneAfterMs` is not held by anyone: the local engine closes it through the
 * reconcile path (END.0504), exactly as a survivor's takeover would. Serving: commands addressed to this node run on
 * the local engine.
 */
export class NodeRoutedCallEngine implements CallEngine {
  readonly #o: NodeRoutingOptions;
  readonly #log: Logger;
  readonly #pending = new Map<string, { resolve: (r: NodeReply) => void; timer: NodeJS.Timeout }>();
  /**
   * Conferences and queues live on the node where their calls are: a read lists this node's and every other live
   * node's; a change is made here if this node has the room, else by the first other node that has it (one at a
   * time: a queue of one name can exist on two nodes, and `front` must take one caller, not one per node).
   */
  readonly #conferences: ConferenceControl | undefined;
  readonly #queues: QueueDirectory | undefined;

  constructor(opts: NodeRoutingOptions) {
    this.#o = opts;
    this.#conferences = opts.local.conferences && {
      list: (account) => this.#all('conferences', 'list', [account]),
      find: (account, sid) => this.#first('conferences', 'find', [account, sid]),
      participants: (account, sid) => this.#first('conferences', 'participants', [account, sid]),
      update: (account, sid, callSid, change) => this.#first('conferences', 'update', [account, sid, callSid, change]),
      kick: async (account, sid, callSid) =>
        (await this.#first('conferences', 'kick', [account, sid, callSid])) === true,
    };
    this.#queues = opts.local.queues && {
      list: (account) => this.#all('queues', 'list', [account]),
      members: (account, name) => this.#first('queues', 'members', [account, name]),
      dequeueToUrl: async (account, name, callId, url) =>
        (await this.#first('queues', 'dequeueToUrl', [account, name, callId, url])) === true,
    };
    this.#log = opts.logger ?? roomLogger('calls').child({ module: 'node-routing' });
    opts.link.on(COMMANDS_CHANNEL, (m) => void this.#serve(m));
    opts.link.on(REPLIES_CHANNEL, (m) => {
      const p = m.id === undefined ? undefined : this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id!);
      clearTimeout(p.timer);
      p.resolve(m.body as NodeReply);
    });
  }

  get conferences(): ConferenceControl | undefined {
    return this.#conferences;
  }

  get queues(): QueueDirectory | undefined {
    return this.#queues;
  }

  originate(call: CallRow, opts: OriginateOptions): Promise<void> {
    return this.#o.local.originate(call, opts);
  }

  isLive(callId: string): boolean {
    return this.#o.local.isLive(callId);
  }

  mailboxChanged(accountId: string, endUserId: string): void {
    this.#o.local.mailboxChanged?.(accountId, endUserId);
  }

  async hangup(call: CallRow): Promise<CallRow> {
    const owner = await this.#remoteOwner(call);
    if (owner === undefined) return this.#o.local.hangup(call);
    const reply = await this.#ask(owner, { verb: 'hangup', callId: call.id });
    if ('error' in reply && reply.error === 'failed') throw new Error(`node ${owner} failed to end call ${call.id}`);
    return (await findCallAnyAccount(this.#o.db, call.id)) ?? call;
  }

  async redirect(call: CallRow, to: InterpreterStart, source: 'url' | 'twiml'): Promise<CallControlOutcome> {
    const owner = await this.#remoteOwner(call);
    if (owner === undefined) return this.#localOrClosed(call, () => this.#o.local.redirect(call, to, source));
    return this.#outcome(owner, await this.#ask(owner, { verb: 'redirect', callId: call.id, to, source }));
  }

  async sendDigits(call: CallRow, digits: string): Promise<CallControlOutcome> {
    const owner = await this.#remoteOwner(call);
    if (owner === undefined) return this.#localOrClosed(call, () => this.#o.local.sendDigits(call, digits));
    return this.#outcome(owner, await this.#ask(owner, { verb: 'digits', callId: call.id, digits }));
  }

  /** A room's method on this node, then on each other live node (in parallel): every answer, concatenated. */
  async #all<T>(room: Room, method: string, args: unknown[]): Promise<T[]> {
    const here = (await this.#runRoom(room, method, args)) as T[];
    const others = await Promise.all(
      (await this.#liveOthers()).map((n) =>
        this.#ask(n, { verb: 'room', room, method, args }).then(
          (r) => ('result' in r && Array.isArray(r.result) ? (r.result as T[]) : []),
          () => [] as T[], // a silent node's rooms are missing from the list (it is about to be declared gone)
        ),
      ),
    );
    return [...here, ...others.flat()];
  }

  /** A room's method here, else on each other live node in turn: the first answer that is not empty or false. */
  async #first<T>(room: Room, method: string, args: unknown[]): Promise<T | undefined> {
    const here = await this.#runRoom(room, method, args);
    if (here !== undefined && here !== false) return here as T;
    let silent: string | undefined;
    for (const n of await this.#liveOthers()) {
      try {
        const r = await this.#ask(n, { verb: 'room', room, method, args });
        if ('result' in r && r.result !== undefined && r.result !== null && r.result !== false) return r.result as T;
      } catch (err) {
        if (!(err instanceof NodeUnreachableError)) throw err;
        silent = n;
      }
    }
    // Not found anywhere that answered: when a node was silent the room may be there.
    if (silent !== undefined) throw new NodeUnreachableError(silent);
    return here as T;
  }

  #runRoom(room: Room, method: string, args: unknown[]): unknown {
    const target = this.#o.local[room] as Record<string, (...a: unknown[]) => unknown> | undefined;
    if (!target || !(ROOM_METHODS[room] as readonly string[]).includes(method)) return undefined;
    return target[method]!.call(target, ...args);
  }

  /** The other nodes that may hold calls now: up or draining, their heartbeat fresh. */
  async #liveOthers(): Promise<string[]> {
    const now = this.#o.now?.() ?? Date.now();
    return (await listNodes(this.#o.db))
      .filter((n: NodeRow) => n.id !== this.#o.link.nodeId && (n.state === 'up' || n.state === 'draining'))
      .filter((n) => now - Date.parse(n.heartbeat_at) <= this.#o.goneAfterMs)
      .map((n) => n.id);
  }

  /** Pending commands are answered as timed out at once (shutdown). */
  close(): void {
    for (const [id, p] of this.#pending) {
      clearTimeout(p.timer);
      p.resolve({ error: 'failed' });
      this.#pending.delete(id);
    }
  }

  /**
   * The node to send the call's command to: undefined when this node holds it (or it names no other node), and
   * when its node is gone, stopped or silent, so that the local engine answers (and closes a call nobody holds).
   */
  async #remoteOwner(call: CallRow): Promise<string | undefined> {
    const id = call.node_id;
    if (!id || id === this.#o.link.nodeId || this.#o.local.isLive(call.id)) return undefined;
    const node = await findNode(this.#o.db, id);
    if (!node || node.state === 'gone' || node.state === 'stopped') return undefined;
    const now = this.#o.now?.() ?? Date.now();
    if (now - Date.parse(node.heartbeat_at) > this.#o.goneAfterMs) return undefined;
    return id;
  }

  /** A redirect or keys for a call no live node holds: it is closed as reconciled, and the answer is `not_held`. */
  async #localOrClosed(call: CallRow, run: () => Promise<CallControlOutcome>): Promise<CallControlOutcome> {
    const outcome = await run();
    if (outcome === 'not_held' && call.node_id && call.node_id !== this.#o.link.nodeId)
      await this.#o.local.hangup(call);
    return outcome;
  }

  #outcome(owner: string, reply: NodeReply): CallControlOutcome {
    if ('outcome' in reply) return reply.outcome;
    if ('error' in reply && reply.error === 'unknown_call') return 'not_held';
    throw new Error(`node ${owner} failed to run a call command`);
  }

  #ask(node: string, command: NodeCommand): Promise<NodeReply> {
    const id = randomUUID();
    return new Promise<NodeReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        this.#log.warn({ node, verb: command.verb }, 'node did not answer a call command');
        reject(new NodeUnreachableError(node));
      }, this.#o.timeoutMs ?? COMMAND_TIMEOUT_MS);
      timer.unref();
      this.#pending.set(id, { resolve, timer });
      this.#o.link.send(COMMANDS_CHANNEL, { to: node, id, body: command });
    });
  }

  /** A command from another node for a call this node holds: run on the local engine, the outcome replied. */
  async #serve(m: NodeMessage): Promise<void> {
    const command = m.body as NodeCommand;
    let reply: NodeReply;
    try {
      if (command.verb === 'room') {
        reply = { result: (await this.#runRoom(command.room, command.method, command.args)) ?? null };
        this.#o.link.send(REPLIES_CHANNEL, { to: m.from, id: m.id, body: reply });
        return;
      }
      const call = await findCallAnyAccount(this.#o.db, command.callId);
      if (!call) reply = { error: 'unknown_call' };
      else if (command.verb === 'hangup') {
        await this.#o.local.hangup(call);
        reply = { outcome: 'ok' };
      } else if (command.verb === 'redirect')
        reply = { outcome: await this.#o.local.redirect(call, command.to, command.source) };
      else reply = { outcome: await this.#o.local.sendDigits(call, command.digits) };
    } catch (err) {
      this.#log.warn({ err, command }, 'a call command from another node failed');
      reply = { error: 'failed' };
    }
    this.#o.link.send(REPLIES_CHANNEL, { to: m.from, id: m.id, body: reply });
  }
}
