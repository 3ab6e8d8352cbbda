import assert from 'node:assert/strict';
import { EventBus, relayEventsAcrossNodes, type BusEvent } from '../../events/index.js';
import { EVENTS_CHANNEL, type NodeLink, type NodeMessage } from '../../store/index.js';

/** A pair of links: what one sends, the other's handlers get (synchronously). */
function pair(): [NodeLink & { sent: NodeMessage[] }, NodeLink & { sent: NodeMessage[] }] {
  const handlers = new Map<string, Array<(m: NodeMessage) => void>>();
  const make = (id: string, other: string) => {
    const sent: NodeMessage[] = [];
    return {
      nodeId: id,
      sent,
      send: (_channel: string, m: Omit<NodeMessage, 'from'>) => {
        const msg = JSON.parse(JSON.stringify({ ...m, from: id })) as NodeMessage;
        sent.push(msg);
        for (const h of handlers.get(other) ?? []) h(msg);
      },
      on: (channel: string, fn: (m: NodeMessage) => void) => {
        assert.equal(channel, EVENTS_CHANNEL);
        handlers.set(id, [...(handlers.get(id) ?? []), fn]);
      },
    };
  };
  return [make('a', 'b'), make('b', 'a')];
}

const event = (over: Partial<BusEvent> = {}): BusEvent => ({
  id: 'e1',
  accountId: 'acct',
  staffOnly: false,
  callId: 'c1',
  frame: { code: 'CALL.0200', event: 'call.answered', sid: 's1', createdAt: '2026-01-01T00:00:00.000Z', data: {} },
  call: { sid: 's1' } as never,
  ...over,
});

/**
 * Events across nodes (events/node-relay.ts): a node's account events reach the other node's bus marked remote,
 * seen by observers that asked for remote events (the stream) only, never sent back, staff-only ones never sent.
 */
describe('events relayed between nodes', () => {
  it("B's stream observer sees A's account events; B's metrics observer and subscribers do not", () => {
    const [la, lb] = pair();
    const busA = new EventBus();
    const busB = new EventBus();
    relayEventsAcrossNodes(busA, la);
    relayEventsAcrossNodes(busB, lb);
    const stream: BusEvent[] = [];
    const metrics: BusEvent[] = [];
    const subscribed: BusEvent[] = [];
    busB.observe((e) => stream.push(e), { remote: true });
    busB.observe((e) => metrics.push(e));
    busB.subscribe('acct', (e) => subscribed.push(e));

    busA.publish(event());
    busA.publish(event({ id: 'e2', accountId: null, staffOnly: true }));
    assert.equal(stream.length, 1);
    assert.equal(stream[0]!.remote, 'a');
    assert.deepEqual(stream[0]!.frame, event().frame);
    assert.equal(stream[0]!.call, undefined, 'the snapshot stays on its node');
    assert.deepEqual(metrics, []);
    assert.deepEqual(subscribed, []);
    assert.equal(la.sent.length, 1, 'the staff-only event was not sent');
    assert.equal(lb.sent.length, 0, 'a relayed event is not sent back');
  });
});
