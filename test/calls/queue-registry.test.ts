import assert from 'node:assert/strict';
import { ManualClock } from '../../kit/index.js';
import { QueueRegistry, type QueueCall, type QueueEvents } from '../../calls/queue/queue-registry.js';

function recorder() {
  const log: string[] = [];
  const events: QueueEvents = {
    joined: (c, q, position) => log.push(`joined ${c.callId} ${q} ${position}`),
    bridged: (c, q, t, agent) => log.push(`bridged ${c.callId} ${q} ${t} ${agent}`),
    left: (c, q, result, t) => log.push(`left ${c.callId} ${q} ${result} ${t}`),
  };
  return { log, events };
}

const call = (id: string): QueueCall => ({
  callId: id,
  callSid: `CA${id}`,
  port: () => {
    throw new Error('no audio in this test');
  },
  emit: () => undefined,
});

/** calls/queue/queue-registry.ts with a ManualClock: order, positions, QueueTime, the average, REST dequeue. */
describe('calls/queue: QueueRegistry', () => {
  it('an agent takes the longest-waiting caller; positions move up; QueueTime is its wait', async () => {
    const clock = new ManualClock(1_000_000);
    const { log, events } = recorder();
    const q = new QueueRegistry(clock, events);
    const a = q.join('acc', 'support', call('a'), 10);
    clock.advance(2000);
    const b = q.join('acc', 'support', call('b'), 10);
    clock.advance(3000);
    assert.deepEqual([a.position(), b.position(), a.size()], [1, 2, 2]);
    let bridgedWith = '';
    const done = new AbortController();
    const bridge = q.dequeueToAgent(
      'acc',
      'support',
      'agent1',
      async (member, gone) => {
        bridgedWith = member.callId;
        assert.equal(b.position(), 1);
        clock.advance(7000);
        done.abort();
        assert.ok(!gone.aborted);
      },
      { timeoutMs: 1000, signal: new AbortController().signal },
    );
    assert.equal(await bridge, 7000);
    assert.equal(bridgedWith, 'a');
    assert.ok(a.holdOver.aborted && !b.holdOver.aborted);
    assert.deepEqual(await a.outcome, { result: 'bridged', queueTimeSeconds: 5 });
    b.leave('hangup');
    assert.deepEqual(await b.outcome, { result: 'hangup', queueTimeSeconds: 10 });
    assert.deepEqual(log, [
      'joined a support 1',
      'joined b support 2',
      'bridged a support 5 agent1',
      'left a support bridged 5',
      'left b support hangup 10',
    ]);
    assert.deepEqual(q.list('acc'), [], 'an empty queue is forgotten');
  });

  it('an agent on an empty queue waits for the next caller, or gives up after its timeout', async () => {
    const clock = new ManualClock(0);
    const q = new QueueRegistry(clock, recorder().events);
    const none = await q.dequeueToAgent('acc', 'sales', 'ag', async () => undefined, {
      timeoutMs: 20,
      signal: new AbortController().signal,
    });
    assert.equal(none, undefined);
    const waiting = q.dequeueToAgent('acc', 'sales', 'ag', async (m) => assert.equal(m.callId, 'x'), {
      timeoutMs: 5000,
      signal: new AbortController().signal,
    });
    const x = q.join('acc', 'sales', call('x'), 10);
    assert.equal(await waiting, 0);
    assert.equal((await x.outcome).result, 'bridged');
  });

  it('a caller hanging up while bridged ends the bridge', async () => {
    const q = new QueueRegistry(new ManualClock(0), recorder().events);
    const x = q.join('acc', 's', call('x'), 10);
    const bridge = q.dequeueToAgent(
      'acc',
      's',
      'ag',
      (_m, gone) => new Promise<void>((r) => gone.addEventListener('abort', () => r())),
      { timeoutMs: 10, signal: new AbortController().signal },
    );
    await new Promise((r) => setImmediate(r));
    x.leave('hangup');
    await bridge;
    assert.equal((await x.outcome).result, 'bridged');
  });

  it('REST: list with size and average wait, members in order, dequeue one or the front one to a URL', async () => {
    const clock = new ManualClock(0);
    const q = new QueueRegistry(clock, recorder().events);
    const a = q.join('acc', 'support', call('a'), 10);
    clock.advance(4000);
    q.join('acc', 'support', call('b'), 10);
    q.join('other', 'support', call('z'), 10);
    clock.advance(2000);
    assert.deepEqual(q.list('acc'), [{ name: 'support', size: 2, averageWaitSeconds: 4 }]);
    assert.deepEqual(
      q.members('acc', 'support')!.map((m) => [m.callId, m.position, m.waitSeconds]),
      [
        ['a', 1, 6],
        ['b', 2, 2],
      ],
    );
    assert.equal(q.members('acc', 'nope'), undefined);
    assert.equal(q.dequeueToUrl('acc', 'support', 'z', 'https://x.test/'), false, "another account's caller");
    assert.equal(q.dequeueToUrl('acc', 'support', 'front', 'https://x.test/next'), true);
    assert.deepEqual(await a.outcome, {
      result: 'redirected',
      queueTimeSeconds: 6,
      redirectUrl: 'https://x.test/next',
    });
    assert.deepEqual(
      q.members('acc', 'support')!.map((m) => m.callId),
      ['b'],
    );
  });

  it('a full queue turns the caller away at once with queue-full', async () => {
    const q = new QueueRegistry(new ManualClock(0), recorder().events);
    q.join('acc', 's', call('a'), 1);
    const b = q.join('acc', 's', call('b'), 1);
    assert.ok(b.holdOver.aborted);
    assert.deepEqual(await b.outcome, { result: 'queue-full', queueTimeSeconds: 0 });
    assert.equal(q.members('acc', 's')!.length, 1);
  });
  it('tells when a queue comes to exist and when it is forgotten (its lease on several nodes); room for one more', async () => {
    const clock = new ManualClock(1_000_000);
    const told: string[] = [];
    const q = new QueueRegistry(clock, recorder().events, {
      onQueueMade: (acc, name) => told.push(`made ${acc} ${name}`),
      onQueueEnded: (acc, name) => told.push(`ended ${acc} ${name}`),
    });
    assert.equal(q.hasRoom('acc', 'support', 1), true, 'no queue yet: a caller would make it');
    const a = q.join('acc', 'support', call('a'), 1);
    assert.equal(q.hasRoom('acc', 'support', 1), false, 'full at maxSize');
    const b = q.join('acc', 'support', call('b'), 2);
    assert.equal(q.hasRoom('acc', 'support', 2), false);
    assert.deepEqual(told, ['made acc support'], 'made once');
    a.leave('hangup');
    assert.deepEqual(told, ['made acc support'], 'a caller still waits: the queue lives on');
    b.leave('leave');
    await b.outcome;
    assert.deepEqual(told, ['made acc support', 'ended acc support']);
    // An agent waiting on an empty queue holds it too, until its timeout.
    const none = await q.dequeueToAgent('acc', 'sales', 'agent', async () => undefined, {
      timeoutMs: 0,
      signal: new AbortController().signal,
    });
    assert.equal(none, undefined);
    assert.deepEqual(told.slice(2), ['made acc sales', 'ended acc sales']);
  });
});
