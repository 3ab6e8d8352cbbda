import assert from 'node:assert/strict';
import {
  NodeRoutedCallEngine,
  NodeUnreachableError,
  type CallEngine,
  type ConferenceControl,
  type ConferenceView,
  type QueueDirectory,
} from '../../calls/index.js';
import {
  COMMANDS_CHANNEL,
  EVENTS_CHANNEL,
  findCallAnyAccount,
  insertAccount,
  insertCall,
  openNodeChannel,
  writeNodeHeartbeat,
  type CallRow,
  type Db,
  type NodeChannelName,
  type NodeLink,
  type NodeMessage,
  type NodeState,
} from '../../store/index.js';
import { NullCallEngine } from '../support/null-call-engine.js';
import { postgresDb, sqliteDb } from '../support/db.js';

/** In-memory links between nodes: what one sends reaches the others' handlers (unless `cut`), asynchronously. */
class Wires {
  readonly #handlers = new Map<string, Map<string, Array<(m: NodeMessage) => void>>>();
  cut = new Set<string>();
  sent: Array<{ channel: string; msg: NodeMessage }> = [];
  link(nodeId: string): NodeLink {
    const mine = new Map<string, Array<(m: NodeMessage) => void>>();
    this.#handlers.set(nodeId, mine);
    return {
      nodeId,
      send: (channel: NodeChannelName, m: Omit<NodeMessage, 'from'>) => {
        const msg = { ...m, from: nodeId };
        this.sent.push({ channel, msg });
        for (const [id, hs] of this.#handlers) {
          if (id === nodeId || this.cut.has(id) || (msg.to !== undefined && msg.to !== id)) continue;
          setImmediate(() => {
            for (const h of hs.get(channel) ?? []) h(JSON.parse(JSON.stringify(msg)) as NodeMessage);
          });
        }
      },
      on: (channel, fn) => mine.set(channel, [...(mine.get(channel) ?? []), fn]),
    };
  }
}

/**
 * The command protocol between nodes (calls/node-routing.ts): a hangup, redirect or keys for a call another node
 * holds run on that node's engine and its outcome comes back; a silent owner times out (503); a call the owner's
 * store does not know is `not_held`; a gone or stale owner is not asked, the call is closed here (END.0504).
 */
describe('calls routed to the node that holds them', function () {
  this.timeout(20000);
  let db: Db;
  let wires: Wires;
  let engineA: NullCallEngine;
  let engineB: NullCallEngine;
  let a: NodeRoutedCallEngine;
  let b: NodeRoutedCallEngine;
  let account: string;

  const node = (id: string, state: NodeState, heartbeatAgoMs = 0) =>
    writeNodeHeartbeat(db, {
      id,
      state,
      version: 't',
      sip_address: '127.0.0.1:5060',
      http_address: '127.0.0.1:8080',
      pid: 1,
      live_calls: 0,
      started_at: new Date().toISOString(),
      heartbeat_at: new Date(Date.now() - heartbeatAgoMs).toISOString(),
    });
  const heldBy = async (nodeId: string): Promise<CallRow> => {
    const call = await insertCall(db, {
      account_id: account,
      direction: 'outbound',
      from_number: '+254711000001',
      to_number: '+254711000002',
      status: 'answered',
      node_id: nodeId,
    });
    return call;
  };

  before(async () => {
    db = await sqliteDb.open();
    account = (await insertAccount(db, 'Nodes')).id;
  });
  after(async () => db?.destroy());
  beforeEach(async () => {
    wires = new Wires();
    engineA = new NullCallEngine(db);
    engineB = new NullCallEngine(db);
    a = new NodeRoutedCallEngine({ db, link: wires.link('a'), local: engineA, goneAfterMs: 10000, timeoutMs: 300 });
    b = new NodeRoutedCallEngine({ db, link: wires.link('b'), local: engineB, goneAfterMs: 10000, timeoutMs: 300 });
    await node('a', 'up');
    await node('b', 'up');
  });

  it("a hangup sent to A ends the call on B's engine and answers the ended record", async () => {
    const call = await heldBy('b');
    await engineB.originate(call, { timeoutSeconds: 30 }); // B holds it
    const ended = await a.hangup(call);
    assert.notEqual(ended.status, 'answered');
    assert.equal(engineB.isLive(call.id), false, "ended on B's engine");
    assert.deepEqual(
      wires.sent.map((s) => [s.channel, s.msg.to]),
      [
        [COMMANDS_CHANNEL, 'b'],
        ['simu_replies', 'a'],
      ],
    );
  });

  it("a redirect and keys reach B's engine and answer its outcome", async () => {
    const call = await heldBy('b');
    await engineB.originate(call, { timeoutSeconds: 30 });
    assert.equal(await a.redirect(call, { url: 'https://example.com/next' }, 'url'), 'ok');
    assert.deepEqual(engineB.redirects[0]?.to, { url: 'https://example.com/next' });
    assert.equal(engineA.redirects.length, 0);
    await a.sendDigits(call, '12#');
    assert.equal(engineB.digits[0]?.digits, '12#');
  });

  it('a call held here is not sent anywhere', async () => {
    const call = await heldBy('a');
    await engineA.originate(call, { timeoutSeconds: 30 });
    assert.equal(await a.redirect(call, { url: 'https://example.com/x' }, 'url'), 'ok');
    assert.equal(wires.sent.length, 0);
    assert.equal(engineA.redirects.length, 1);
  });

  it('an owner that does not answer in time: 503 PLATFORM.0503 with Retry-After, the call left alone', async () => {
    const call = await heldBy('b');
    wires.cut.add('b');
    const t0 = Date.now();
    await assert.rejects(a.hangup(call), (e: unknown) => {
      assert.ok(e instanceof NodeUnreachableError);
      assert.equal(e.status, 503);
      assert.equal(e.code, 'PLATFORM.0503');
      assert.equal(e.retryAfterSeconds, 1);
      return true;
    });
    assert.ok(Date.now() - t0 >= 290, 'waited for the timeout');
    assert.equal((await findCallAnyAccount(db, call.id))?.status, 'answered', 'not closed');
  });

  it("a call the owner's store does not know is not held (409 CALL_ENDED for the API)", async () => {
    const call = { ...(await heldBy('b')), id: '00000000-0000-7000-8000-000000000000' };
    assert.equal(await a.redirect(call, { url: 'https://example.com/x' }, 'url'), 'not_held');
  });

  for (const [what, state, ago] of [
    ['gone', 'gone', 0],
    ['stopped', 'stopped', 0],
    ['silent (heartbeat stale)', 'up', 60000],
  ] as const) {
    it(`a call of a ${what} node is closed here as reconciled, nothing sent`, async () => {
      await node('b', state, ago);
      const call = await heldBy('b');
      const ended = await a.hangup(call);
      assert.equal(ended.status !== 'answered', true);
      assert.equal(wires.sent.length, 0);
      const redirected = await heldBy('b');
      assert.equal(await a.redirect(redirected, { url: 'https://example.com/x' }, 'url'), 'not_held');
      assert.notEqual((await findCallAnyAccount(db, redirected.id))?.status, 'answered', 'closed');
      assert.equal(wires.sent.length, 0);
    });
  }

  /** A local engine with rooms: conferences (sids, each with its participants' call sids) and queues (callers). */
  const withRooms = (e: NullCallEngine, confs: Record<string, string[]>, queue: string[]): CallEngine => {
    const view = (sid: string): ConferenceView => ({
      sid,
      name: sid,
      status: 'in-progress',
      createdAt: '',
      startedAt: null,
      participantCount: confs[sid]!.length,
      recording: false,
    });
    const conferences: ConferenceControl = {
      list: () => Object.keys(confs).map(view),
      find: (_a, sid) => (confs[sid] ? view(sid) : undefined),
      participants: () => undefined,
      update: () => undefined,
      kick: (_a, sid, callSid) => {
        const i = confs[sid]?.indexOf(callSid) ?? -1;
        if (i < 0) return false;
        confs[sid]!.splice(i, 1);
        return true;
      },
    };
    const queues: QueueDirectory = {
      list: () => (queue.length ? [{ name: 'q', size: queue.length, averageWaitSeconds: 0 }] : []),
      members: () => undefined,
      dequeueToUrl: (_a, _n, callId) => {
        const i = callId === 'front' ? (queue.length ? 0 : -1) : queue.indexOf(callId);
        if (i < 0) return false;
        queue.splice(i, 1);
        return true;
      },
    };
    return {
      originate: (c, o) => e.originate(c, o),
      hangup: (c) => e.hangup(c),
      redirect: (c, t, s) => e.redirect(c, t, s),
      sendDigits: (c, d) => e.sendDigits(c, d),
      isLive: (id) => e.isLive(id),
      conferences,
      queues,
    };
  };

  it('conferences and queues: reads span both nodes, a change is made where the room is, once', async () => {
    const confsA: Record<string, string[]> = { CF0: ['CA0'] };
    const confsB: Record<string, string[]> = { CF1: ['CA1', 'CA2'] };
    const queueA: string[] = [];
    const queueB = ['c1', 'c2'];
    const w = new Wires();
    const ra = new NodeRoutedCallEngine({
      db,
      link: w.link('a'),
      local: withRooms(engineA, confsA, queueA),
      goneAfterMs: 10000,
      timeoutMs: 300,
    });
    new NodeRoutedCallEngine({
      db,
      link: w.link('b'),
      local: withRooms(engineB, confsB, queueB),
      goneAfterMs: 10000,
      timeoutMs: 300,
    });
    const list = await ra.conferences!.list(account);
    assert.deepEqual(list.map((c) => c.sid).sort(), ['CF0', 'CF1']);
    assert.equal((await ra.conferences!.find(account, 'CF1'))?.participantCount, 2);
    assert.equal(await ra.conferences!.find(account, 'CF9'), undefined);
    assert.equal(await ra.conferences!.kick(account, 'CF1', 'CA2'), true);
    assert.deepEqual(confsB.CF1, ['CA1']);
    assert.equal(await ra.conferences!.kick(account, 'CF1', 'CA2'), false, 'already gone');
    assert.equal(await ra.conferences!.kick(account, 'CF0', 'CA0'), true, 'a room here: nothing sent');
    assert.deepEqual(
      (await ra.queues!.list(account)).map((q) => q.size),
      [2],
    );
    assert.equal(await ra.queues!.dequeueToUrl(account, 'q', 'front', 'https://example.com/x'), true);
    assert.deepEqual(queueB, ['c2'], 'front took one caller');

    // A silent node: a room not found here may be there, 503; a list has what answered.
    w.cut.add('b');
    await assert.rejects(async () => ra.conferences!.find(account, 'CF1'), NodeUnreachableError);
    assert.deepEqual(
      (await ra.conferences!.list(account)).map((c) => c.sid),
      ['CF0'],
    );
    ra.close();
  });

  it('close answers pending commands at once', async () => {
    const call = await heldBy('b');
    wires.cut.add('b');
    const p = a.redirect(call, { url: 'https://example.com/x' }, 'url');
    setTimeout(() => a.close(), 20);
    await assert.rejects(p, /failed to run/);
    void b;
  });
});

/** The PostgreSQL channel itself: addressed delivery, order, a message over the NOTIFY limit, own echo skipped. */
describe('the node channel on PostgreSQL (LISTEN/NOTIFY)', function () {
  this.timeout(60000);
  let db: Db;
  before(async () => {
    db = await postgresDb.open();
  });
  after(async () => db?.destroy());

  it('delivers to the addressed node or to all others, in order, large bodies through node_messages', async () => {
    const errors: unknown[] = [];
    const x = openNodeChannel(db, 'x', (e) => errors.push(e))!;
    const y = openNodeChannel(db, 'y', (e) => errors.push(e))!;
    const z = openNodeChannel(db, 'z', (e) => errors.push(e))!;
    await Promise.all([x.ready, y.ready, z.ready]);
    const got: Record<string, unknown[]> = { x: [], y: [], z: [] };
    for (const [id, ch] of [
      ['x', x],
      ['y', y],
      ['z', z],
    ] as const)
      ch.on(EVENTS_CHANNEL, (m) => got[id]!.push(m.body));
    const big = 'v'.repeat(20000);
    for (let i = 0; i < 30; i++) x.send(EVENTS_CHANNEL, { body: i === 10 ? { i, big } : { i } });
    x.send(EVENTS_CHANNEL, { to: 'z', body: { only: 'z' } });
    const deadline = Date.now() + 5000;
    while ((got.y!.length < 30 || got.z!.length < 31) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(got.x!.length, 0, 'a node does not hear itself');
    assert.equal(got.y!.length, 30, 'y hears the broadcasts only');
    assert.equal(got.z!.length, 31);
    // The large body arrives whole (read from its row), and all in the order sent, the large one included.
    assert.equal((got.y![10] as { big: string }).big.length, 20000);
    assert.deepEqual(
      got.y!.map((b) => (b as { i: number }).i),
      Array.from({ length: 30 }, (_, i) => i),
    );
    assert.deepEqual(got.z![30], { only: 'z' });
    assert.deepEqual(errors, []);
    await Promise.all([x.close(), y.close(), z.close()]);
  });

  it('is not opened on SQLite (one box: everything local)', async () => {
    const lite = await sqliteDb.open();
    assert.equal(
      openNodeChannel(lite, 'x', () => undefined),
      undefined,
    );
    await lite.destroy();
  });
});
