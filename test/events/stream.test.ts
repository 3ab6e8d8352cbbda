import assert from 'node:assert/strict';
import http from 'node:http';
import { WebSocket, WebSocketServer } from 'ws';
import { consumeStreamToken, mintStreamToken, type Db } from '../../store/index.js';
import {
  EventBus,
  EventCodes,
  EventPublisher,
  StatusCallbackOutbox,
  attachStream,
  mintStaffStreamToken,
  type StreamDeps,
  type StreamServer,
} from '../../events/index.js';
import { Receiver, fileDb, seedAccount, seedCall, sleep, waitFor } from './helpers.js';
import { loopbackAllowed, quiet } from './setup.js';

interface Client {
  ws: WebSocket;
  frames: any[];
}

describe('events: WebSocket stream', function () {
  this.timeout(20000);
  let db: Db;
  let server: http.Server;
  let base: string;
  let bus: EventBus;
  let publisher: EventPublisher;
  let stream: StreamServer;
  const clients: WebSocket[] = [];

  async function setUp(opts: Partial<StreamDeps> = {}) {
    server = http.createServer((_req, res) => res.writeHead(404).end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `ws://127.0.0.1:${(server.address() as { port: number }).port}`;
    stream = attachStream(server, {
      bus,
      consumeToken: (t) => consumeStreamToken(db, t),
      logger: quiet,
      ...opts,
    });
  }

  beforeEach(async () => {
    db = (await fileDb()).db;
    bus = new EventBus(quiet);
    publisher = new EventPublisher({ db, bus, logger: quiet });
  });
  afterEach(async () => {
    for (const ws of clients.splice(0)) ws.terminate();
    await stream?.close();
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    await db.destroy();
  });

  /** Opens a socket; resolves with it once open, or rejects with the HTTP status of a refused handshake. */
  function connect(token: string, path = '/api/stream'): Promise<Client> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`${base}${path}?token=${encodeURIComponent(token)}`);
      clients.push(ws);
      const c: Client = { ws, frames: [] };
      ws.on('message', (m) => c.frames.push(JSON.parse(String(m))));
      ws.once('open', () => resolve(c));
      ws.once('unexpected-response', (_req, res) =>
        reject(Object.assign(new Error('refused'), { status: res.statusCode })),
      );
      ws.once('error', reject);
    });
  }
  const tokenFor = (accountId: string) => mintStreamToken(db, accountId, 60);

  it('a stream token opens one socket only; unknown and missing tokens get 401', async () => {
    await setUp();
    const a = await seedAccount(db);
    const token = await tokenFor(a);
    await connect(token);
    await assert.rejects(connect(token), { status: 401 });
    await assert.rejects(connect('st_not-a-token'), { status: 401 });
    await assert.rejects(connect(''), { status: 401 });
    assert.equal(stream.clientCount, 1);
  });

  it('frames are scoped to the account; the staff stream sees every account and PLATFORM.0001', async () => {
    await setUp();
    const a = await seedAccount(db);
    const b = await seedAccount(db);
    const ca = await connect(await tokenFor(a));
    const cb = await connect(await tokenFor(b));
    const staff = await connect((await mintStaffStreamToken(db)).token);

    await publisher.emit({ accountId: a, code: EventCodes.walletLow, data: { who: 'a' } });
    await publisher.emit({ accountId: b, code: EventCodes.walletLow, data: { who: 'b' } });
    publisher.publishPlatformConcurrent(7);
    await waitFor(() => staff.frames.length === 3 && ca.frames.length === 1 && cb.frames.length === 1, 3000, 'frames');
    await sleep(50);
    assert.deepEqual(
      ca.frames.map((f) => f.data.who),
      ['a'],
    );
    assert.deepEqual(
      cb.frames.map((f) => f.data.who),
      ['b'],
    );
    assert.deepEqual(
      staff.frames.map((f) => f.code),
      ['BILL.0310', 'BILL.0310', 'PLATFORM.0001'],
    );
    assert.deepEqual(staff.frames[2].data, { activeCalls: 7 });
  });

  it('the frame is exactly {code, event, sid?, customPayload?, createdAt, data}, empty keys left out', async () => {
    await setUp();
    const a = await seedAccount(db);
    const c = await connect(await tokenFor(a));
    const call = await seedCall(db, a, {
      status: 'completed',
      reason_code: 'END.0486',
      duration_seconds: 12,
      talk_seconds: 0,
      cost_cents: 250,
      custom_payload: JSON.stringify({ order: 42 }),
    });
    const plain = await seedCall(db, a);
    await publisher.emit({ accountId: a, code: EventCodes.callCompleted, callId: call.id });
    await publisher.emit({ accountId: a, code: EventCodes.callRinging, callId: plain.id });
    await publisher.emit({ accountId: a, code: EventCodes.walletLow });
    await waitFor(() => c.frames.length === 3, 3000, 'three frames');

    const [completed, ringing, low] = c.frames;
    assert.deepEqual(Object.keys(completed), ['code', 'event', 'sid', 'customPayload', 'createdAt', 'data']);
    assert.equal(completed.code, 'CALL.0300');
    assert.equal(completed.event, 'call.completed');
    assert.equal(completed.sid, call.sid);
    assert.deepEqual(completed.customPayload, { order: 42 });
    assert.ok(!Number.isNaN(Date.parse(completed.createdAt)));
    assert.deepEqual(completed.data, { reasonCode: 'END.0486', duration: 12, cost: '2.50' });
    assert.ok(!('id' in completed) && !('accountId' in completed));

    assert.deepEqual(Object.keys(ringing), ['code', 'event', 'sid', 'createdAt'], 'no payload, no data: omitted');
    assert.deepEqual(Object.keys(low), ['code', 'event', 'createdAt']);
  });

  it('one event reaches the stream and the status webhook: the webhook adds id, accountId and the snapshot', async () => {
    await setUp();
    const receiver = await new Receiver().start();
    const outbox = new StatusCallbackOutbox({
      db,
      publisher,
      pollIntervalMs: 20,
      logger: quiet,
      urlPolicy: loopbackAllowed,
    }).start();
    try {
      const a = await seedAccount(db, receiver.url('/status'));
      const c = await connect(await tokenFor(a));
      const call = await seedCall(db, a, {
        status: 'completed',
        reason_code: 'END.0200',
        duration_seconds: 61,
        talk_seconds: 55,
        cost_cents: 1234,
      });
      const e = await publisher.emit({ accountId: a, code: EventCodes.callCompleted, callId: call.id });
      await waitFor(() => c.frames.length >= 1 && receiver.delivered().length === 1, 3000, 'both transports');
      const frame = c.frames[0]; // WH.0200 may follow it: it is emitted once the delivery is recorded
      const hook = receiver.delivered()[0]!.json;
      assert.deepEqual(frame.data, { reasonCode: 'END.0200', duration: 61, cost: '12.34' });
      assert.equal(hook.id, e.id);
      assert.equal(hook.accountId, a);
      for (const k of ['code', 'event', 'sid', 'createdAt'] as const) assert.equal(hook[k], frame[k], k);
      assert.equal(hook.data.reason_code, 'END.0200', 'the snapshot names it reason_code');
      assert.equal(hook.data.talk_seconds, 55);
      assert.equal(hook.data.reasonCode, 'END.0200');
      assert.equal(receiver.delivered()[0]!.headers['x-voice-event'], 'call.completed');
      // WH.0200 for that delivery reaches the account's stream too.
      await waitFor(() => c.frames.some((f) => f.code === 'WH.0200'), 3000, 'WH.0200 on the stream');
      assert.equal(c.frames.find((f) => f.code === 'WH.0200').data.eventId, e.id);
    } finally {
      await outbox.close();
      await receiver.close();
    }
  });

  it('a slow consumer is dropped while the others keep receiving every frame', async () => {
    await setUp({ maxBufferedBytes: 256 * 1024, pingIntervalMs: 60_000 });
    const a = await seedAccount(db);
    const fast = await connect(await tokenFor(a));
    const slow = await connect(await tokenFor(a));
    // The slow client stops reading: the server's queue for it can only grow.
    (slow.ws as any)._socket.pause();
    const big = 'x'.repeat(32 * 1024);
    const n = 400; // 12.8 MB in all: more than loopback socket buffers hold
    for (let i = 0; i < n; i++) {
      bus.publish({
        id: String(i),
        accountId: a,
        staffOnly: false,
        frame: { code: 'BILL.0310', event: 'wallet.low', createdAt: new Date().toISOString(), data: { i, big } },
      });
      if (i % 50 === 0) await sleep(5); // let the fast reader drain between bursts
    }
    await waitFor(() => fast.frames.length === n, 10000, 'the fast client receives everything');
    assert.deepEqual(
      fast.frames.map((f) => f.data.i),
      [...Array(n).keys()],
    );
    await waitFor(() => stream.clientCount === 1, 3000, 'the slow client dropped');
  });

  it('a socket that stops answering pings is terminated', async () => {
    await setUp({ pingIntervalMs: 100 });
    const a = await seedAccount(db);
    const live = await connect(await tokenFor(a));
    const dead = await connect(await tokenFor(a));
    (dead.ws as any)._socket.pause(); // still connected at TCP level, but never reads the ping nor pongs
    await waitFor(() => stream.clientCount === 1, 3000, 'the dead socket terminated');
    await sleep(350); // a few more ping rounds: the live socket answers them and stays
    assert.equal(stream.clientCount, 1, 'the dead socket is gone, the live one stays');
    assert.equal(live.ws.readyState, WebSocket.OPEN);
  });

  it('upgrades on other paths are left to other handlers', async () => {
    await setUp();
    const other = new WebSocketServer({ noServer: true });
    server.on('upgrade', (req, socket, head) => {
      if (req.url?.startsWith('/sip')) other.handleUpgrade(req, socket, head, (ws) => ws.send('sip-ok'));
    });
    const ws = new WebSocket(`${base}/sip`);
    clients.push(ws);
    const msg = await new Promise<string>((resolve, reject) => {
      ws.once('message', (m) => resolve(String(m)));
      ws.once('error', reject);
    });
    assert.equal(msg, 'sip-ok');
    assert.equal(stream.clientCount, 0);
    other.close();
  });
});
