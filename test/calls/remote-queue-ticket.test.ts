import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { roomLogger } from '../../config/index.js';
import { RemoteTicket, type QueueNodesDeps, type QueueingCall } from '../../calls/queue/node-queue.js';
import type { LegAudioPort } from '../../media/index.js';
import type { Dialog } from '../../sip/stack/index.js';

const INFO_TYPE = 'application/x-simu-queue+json';

/** A leg's dialog as RemoteTicket uses it: INFO from the holder, BYE either way, its state. */
class FakeLeg extends EventEmitter {
  state = 'confirmed';
  byes: Array<Record<string, string> | undefined> = [];
  bye(headers?: Record<string, string>): Promise<void> {
    this.byes.push(headers);
    this.end();
    return Promise.resolve();
  }
  end(): void {
    if (this.state === 'terminated') return;
    this.state = 'terminated';
    this.emit('destroy', 'remote-bye');
  }
  /** The holder says something over the leg; answers the status RemoteTicket replied with. */
  say(body: unknown): number {
    let status = 0;
    const req = { headers: new Map([['content-type', INFO_TYPE]]), text: JSON.stringify(body) };
    this.emit('info', req, { send: (s: number) => (status = s) });
    return status;
  }
}

function port(): LegAudioPort & { sent: number } {
  const p = {
    sent: 0,
    onReceived: () => () => undefined,
    send: () => {
      p.sent += 1;
      return true;
    },
  };
  return p as unknown as LegAudioPort & { sent: number };
}

function setUp(o: { holderUp?: () => boolean } = {}) {
  const emitted: Array<[string, Record<string, unknown>]> = [];
  const deleted: string[] = [];
  const d = {
    log: roomLogger('calls'),
    rooms: { inService: () => Promise.resolve(o.holderUp?.() ?? true) },
    media: {
      audioPort: () => port(),
      deleteSession: (id: string) => {
        deleted.push(id);
        return Promise.resolve({});
      },
    },
  } as unknown as QueueNodesDeps;
  const call: QueueingCall = {
    life: {
      row: { sid: 'CA1' },
      emit: (code: string, data: Record<string, unknown>) => {
        emitted.push([code, data]);
        return Promise.resolve();
      },
    } as unknown as QueueingCall['life'],
    port: () => port(),
  };
  const leg = new FakeLeg();
  const ticket = new RemoteTicket(
    d,
    call,
    'support',
    { nodeId: 'a', sipAddress: 'x' },
    'leg1',
    leg as unknown as Dialog,
  );
  return { ticket, leg, emitted, deleted };
}

/** calls/queue/node-queue.ts: a caller of this node waiting in a queue another node holds. */
describe('calls/queue: a caller waiting in another node’s queue (RemoteTicket)', () => {
  it('its place is what the holder last said; bridged stops the hold; the outcome after the bridge', async () => {
    const { ticket, leg, deleted } = setUp();
    assert.equal(leg.say({ state: { position: 3, size: 3, averageWaitSeconds: 12 } }), 200);
    await ticket.placed;
    assert.deepEqual([ticket.position(), ticket.size(), ticket.averageWaitSeconds()], [3, 3, 12]);
    leg.say({ state: { position: 1, size: 2, averageWaitSeconds: 9 } });
    assert.equal(ticket.position(), 1, 'moved up');
    assert.equal(ticket.holdOver.aborted, false);
    leg.say({ bridged: { queueTime: 7 } });
    assert.equal(ticket.holdOver.aborted, true, 'the hold audio stops when an agent takes the caller');
    leg.say({ left: { result: 'bridged', queueTimeSeconds: 7 } });
    let settled = false;
    void ticket.outcome.then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, false, 'a bridged caller leaves when the holder ends the leg, not before');
    leg.end();
    assert.deepEqual(await ticket.outcome, { result: 'bridged', queueTimeSeconds: 7 });
    assert.deepEqual(deleted, ['leg1'], "the leg's media session is deleted");
  });

  it('dequeued to a URL at the holder: leaves at once with it; the leg is ended here', async () => {
    const { ticket, leg } = setUp();
    leg.say({ left: { result: 'redirected', queueTimeSeconds: 4, redirectUrl: 'https://x.test/next' } });
    assert.deepEqual(await ticket.outcome, {
      result: 'redirected',
      queueTimeSeconds: 4,
      redirectUrl: 'https://x.test/next',
    });
    assert.equal(leg.byes.length, 1);
  });

  it('leaving here (a Leave, a hangup) ends the leg with its result for the holder', async () => {
    const { ticket, leg } = setUp();
    ticket.leave('leave');
    assert.equal((await ticket.outcome).result, 'leave');
    assert.deepEqual(leg.byes, [{ 'X-Simu-Queue-Result': 'leave' }]);
    ticket.leave('hangup');
    assert.equal(leg.byes.length, 1, 'once');
  });

  it('the leg ending without a word from the holder: error', async () => {
    const { ticket, leg } = setUp();
    leg.end();
    assert.equal((await ticket.outcome).result, 'error');
  });

  it('the holder out of service: system-shutdown, told on the caller’s call (QUEUE.0300) since the holder cannot', async () => {
    const { ticket, emitted, leg } = setUp({ holderUp: () => false });
    const outcome = await ticket.outcome;
    assert.equal(outcome.result, 'system-shutdown');
    assert.deepEqual(
      emitted.map(([code, data]) => [code, data.queue, data.result]),
      [['QUEUE.0300', 'support', 'system-shutdown']],
    );
    assert.equal(ticket.holdOver.aborted, true);
    assert.equal(leg.state, 'terminated');
  }).timeout(5000);
});
