import {
  beatNode,
  claimGoneNodes,
  findNode,
  liveCallIds,
  markNodeStopped,
  nowIso,
  releaseNodeLeases,
  writeNodeHeartbeat,
  type Db,
  type NodeRow,
} from '../store/index.js';
import { roomLogger, type Logger } from '../config/index.js';
import type { BillingEmit } from './codes.js';
import { reconcileCall } from './reconcile.js';
import type { BillingIncrement } from './rating.js';
import { systemClock, type Clock } from '../kit/index.js';

/** How often a node writes its heartbeat, and looks for nodes whose heartbeat stopped. */
export const HEARTBEAT_MS = 2000;

export interface NodeWatchOptions {
  db: Db;
  /** This node's row, less what the watch writes itself (state, live calls, heartbeat). */
  node: Omit<NodeRow, 'state' | 'live_calls' | 'heartbeat_at' | 'gone_at' | 'gone_by'>;
  /** A node silent this long is gone. */
  goneAfterMs: number;
  liveCalls: () => number;
  draining: () => boolean;
  emit?: BillingEmit;
  increment?: BillingIncrement;
  /** Told of each call it closed for a gone node (the credit monitor stops tracking it). */
  onClosed?: (callId: string) => void;
  /**
   * This node was declared gone at `goneAt` while it was silent (stalled, cut off from the store) and a survivor
   * closes its calls: those it still holds are to be ended (BYE), their records and charges as the survivor wrote
   * them. Resolves once they have ended; the node then joins again.
   */
  onDeclaredGone?: (goneAt: string) => Promise<void>;
  clock?: Pick<Clock, 'now' | 'every'>;
  logger?: Logger;
}

/**
 * A node's presence in the store it shares with other nodes: its heartbeat, and the takeover of nodes whose
 * heartbeat stopped. A gone node's calls are closed once, by whichever survivor's conditional update marked it
 * gone (store/nodes.ts claimGoneNodes), as the reconcile sweep closes a call nobody holds: END.0504, billed to the
 * last moment its credit monitor vouched for, one terminal event and one status callback each; its room leases
 * (conferences, queues) are freed.
 */
export class NodeWatch {
  readonly #o: NodeWatchOptions & { clock: Pick<Clock, 'now' | 'every'> };
  readonly #log: Logger;
  #timer: { cancel(): void } | undefined;
  #running: Promise<void> | undefined;
  #closed = false;
  /** Its row has been written since it started. */
  #joined = false;

  constructor(opts: NodeWatchOptions) {
    this.#o = { clock: systemClock, ...opts };
    this.#log = opts.logger ?? roomLogger('billing').child({ module: 'nodes' });
  }

  async start(): Promise<this> {
    // A node starting holds no rooms: leases a crash of its earlier process left are freed.
    await releaseNodeLeases(this.#o.db, this.#o.node.id);
    await this.beat();
    this.#timer = this.#o.clock.every(HEARTBEAT_MS, () => void this.beat(), 'node-heartbeat');
    return this;
  }

  /** One heartbeat and one look for gone nodes; overlapping calls share the one running. */
  beat(): Promise<void> {
    this.#running ??= this.#beat()
      .catch((err: unknown) => this.#log.warn({ err }, 'node heartbeat failed'))
      .finally(() => (this.#running = undefined));
    return this.#running;
  }

  async #beat(): Promise<void> {
    if (this.#closed) return;
    const now = this.#o.clock.now();
    const beat = {
      id: this.#o.node.id,
      state: this.#o.draining() ? ('draining' as const) : ('up' as const),
      live_calls: this.#o.liveCalls(),
      heartbeat_at: nowIso(new Date(now)),
    };
    // Once joined, a beat never overwrites `gone`: a node declared gone while silent must learn it, not carry on
    // with calls the store has closed and billed (they would run on unbilled).
    if (!this.#joined || !(await beatNode(this.#o.db, beat))) {
      const row = this.#joined ? await findNode(this.#o.db, beat.id) : undefined;
      if (row?.state === 'gone') await this.#declaredGone(row);
      await writeNodeHeartbeat(this.#o.db, {
        ...this.#o.node,
        ...beat,
        live_calls: this.#o.liveCalls(),
        heartbeat_at: nowIso(new Date(this.#o.clock.now())),
      });
      this.#joined = true;
    }
    const gone = await claimGoneNodes(
      this.#o.db,
      this.#o.node.id,
      nowIso(new Date(now - this.#o.goneAfterMs)),
      nowIso(new Date(now)),
    );
    for (const node of gone) await this.#takeOver(node);
  }

  async #takeOver(node: string): Promise<void> {
    const ids = await liveCallIds(this.#o.db, nowIso(new Date(this.#o.clock.now())), node);
    let closed = 0;
    for (const id of ids) {
      const r = await reconcileCall(this.#o.db, id, this.#o.clock.now(), {
        emit: this.#o.emit,
        increment: this.#o.increment,
      });
      if (r) {
        closed++;
        this.#o.onClosed?.(id);
      }
    }
    // Its conference and queue rooms are gone with it: the next caller of each takes the room anew.
    const rooms = await releaseNodeLeases(this.#o.db, node);
    this.#log.warn({ node, closed, rooms }, 'node gone (no heartbeat): its calls closed (END.0504), its rooms freed');
  }

  async #declaredGone(row: NodeRow): Promise<void> {
    this.#log.error(
      { node: row.id, goneAt: row.gone_at, by: row.gone_by, held: this.#o.liveCalls() },
      'this node was declared gone while silent and its calls closed by another (END.0504): ending them here',
    );
    await this.#o.onDeclaredGone?.(row.gone_at ?? nowIso(new Date(this.#o.clock.now())));
  }

  /** This node stops in order: its row says so, and no survivor takes it over. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#timer?.cancel();
    await this.#running;
    await markNodeStopped(this.#o.db, this.#o.node.id, nowIso()).catch(() => undefined);
  }
}
