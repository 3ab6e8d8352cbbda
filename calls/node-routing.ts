import { randomUUID } from 'node:crypto';
import { roomLogger, type Logger } from '../config/index.js';
import {
  COMMANDS_CHANNEL,
  REPLIES_CHANNEL,
  findCallAnyAccount,
  findNode,
  type CallRow,
  type Db,
  type NodeLink,
  type NodeMessage,
} from '../store/index.js';
import type { InterpreterStart } from '../verbs/index.js';
import type { CallControlOutcome, CallEngine, OriginateOptions } from './call-engine.js';

/** How long a node waits for the node holding a call to answer a command. */
export const COMMAND_TIMEOUT_MS = 3000;

/** A command for the node holding a call; small (ids, a URL or a verb document) as NOTIFY wants it. */
export type NodeCommand =
  | { verb: 'hangup'; callId: string }
  | { verb: 'redirect'; callId: string; to: InterpreterStart; source: 'url' | 'twiml' }
  | { verb: 'digits'; callId: string; digits: string };

/** The owner's answer: an outcome, or why the command could not run. */
export type NodeReply = { outcome: CallControlOutcome } | { error: 'unknown_call' | 'failed' };

/** The node holding the call did not answer in time: the request may be tried again. */
export class NodeUnreachableError extends Error {
  readonly status = 503;
  readonly code = 'PLATFORM.0503';
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

  constructor(opts: NodeRoutingOptions) {
    this.#o = opts;
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

  get queues() {
    return this.#o.local.queues;
  }

  get conferences() {
    return this.#o.local.conferences;
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
    if (reply.error === 'unknown_call') return 'not_held';
    throw new Error(`node ${owner} failed to run a call command`);
  }

  #ask(node: string, command: NodeCommand): Promise<NodeReply> {
    const id = randomUUID();
    return new Promise<NodeReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        this.#log.warn({ node, verb: command.verb, callId: command.callId }, 'node did not answer a call command');
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
      const call = await findCallAnyAccount(this.#o.db, command.callId);
      if (!call) reply = { error: 'unknown_call' };
      else if (command.verb === 'hangup') {
        await this.#o.local.hangup(call);
        reply = { outcome: 'ok' };
      } else if (command.verb === 'redirect')
        reply = { outcome: await this.#o.local.redirect(call, command.to, command.source) };
      else reply = { outcome: await this.#o.local.sendDigits(call, command.digits) };
    } catch (err) {
      this.#log.warn({ err, verb: command.verb, callId: command.callId }, 'a call command from another node failed');
      reply = { error: 'failed' };
    }
    this.#o.link.send(REPLIES_CHANNEL, { to: m.from, id: m.id, body: reply });
  }
}
