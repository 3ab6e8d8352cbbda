/**
 * Non-INVITE server transactions over UDP in Completed (RFC 3261 §17.2.2) are kept by the transaction layer as
 * their final response's bytes (sip/stack/transaction/completed-responses.ts): the transaction ends at once, one
 * timer serves them all, and every retransmission of the request until Timer J gets the same bytes.
 */
import { strict as assert } from 'node:assert';
import v8 from 'node:v8';
import vm from 'node:vm';
import { ManualClock } from '../../../sip/stack/clock.js';
import { createResponse, parseMessage, SipRequest, type SipMessage } from '../../../sip/stack/message/index.js';
import {
  DEFAULT_TIMER_SETTINGS,
  TransactionLayer,
  TransactionState as S,
  type MessageChannel,
  type ServerTransaction,
} from '../../../sip/stack/transaction/index.js';
import { SipTransportError } from '../../../sip/stack/errors.js';
import { CompletedResponses } from '../../../sip/stack/transaction/completed-responses.js';

const J = 64 * DEFAULT_TIMER_SETTINGS.T1;

function request(method: string, branch: string): SipRequest {
  const raw =
    `${method} sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=${branch}\r\n` +
    `From: <sip:alice@example.com>;tag=a1\r\nTo: <sip:bob@example.com>\r\nCall-ID: c-${branch}\r\n` +
    `CSeq: 1 ${method}\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n`;
  const r = parseMessage(Buffer.from(raw));
  assert.ok(r.ok && r.message instanceof SipRequest);
  return r.message;
}

function setup(reliable = false) {
  const clock = new ManualClock();
  const sent: Buffer[] = [];
  const channel: MessageChannel & { fail: boolean } = {
    reliable,
    fail: false,
    send(msg: SipMessage) {
      if (this.fail) return Promise.reject(new SipTransportError('network unreachable'));
      sent.push(msg.toBuffer());
      return Promise.resolve();
    },
  };
  const passedUp: Array<{ req: SipRequest; tx: ServerTransaction }> = [];
  const errors: Array<ServerTransaction | undefined> = [];
  const layer = new TransactionLayer({
    clock,
    timers: DEFAULT_TIMER_SETTINGS,
    responseChannel: () => channel,
    user: {
      onRequest: (req, tx) => void (tx && passedUp.push({ req, tx })),
      onServerTransportError: (tx) => void errors.push(tx),
    },
  });
  /** Answers every request passed up so far with 200 OK. */
  const answerAll = () => {
    for (const { req, tx } of passedUp) if (tx.state === S.Trying) layer.respond(tx, createResponse(req, 200));
  };
  return { clock, sent, channel, passedUp, errors, layer, answerAll };
}

describe('completed non-INVITE server transactions over UDP (RFC 3261 §17.2.2)', () => {
  it('end at once and share one timer, yet each retransmission until Timer J gets the same response bytes', () => {
    const { clock, sent, passedUp, layer, answerAll } = setup();
    for (let i = 0; i < 1000; i++) layer.receiveRequest(request('REGISTER', `z9hG4bK-${i}`));
    answerAll();
    assert.equal(sent.length, 1000);
    assert.ok(passedUp.every(({ tx }) => tx.state === S.Terminated)); // nothing of them is held
    assert.equal(clock.pendingTimers, 1); // one timer for all, not one each
    assert.equal(layer.size.server, 1000); // still counted: they answer retransmissions

    clock.advance(J - 1);
    layer.receiveRequest(request('REGISTER', 'z9hG4bK-7'));
    assert.equal(passedUp.length, 1000, 'a retransmission is not passed up again');
    assert.equal(sent.length, 1001);
    assert.ok(sent[1000]!.equals(sent[7]!), 'the same bytes as the first response');

    clock.advance(1); // Timer J
    layer.receiveRequest(request('REGISTER', 'z9hG4bK-7'));
    assert.equal(passedUp.length, 1001, 'after Timer J the same request is a new one');
    layer.receiveRequest(request('REGISTER', 'z9hG4bK-8'));
    assert.equal(passedUp.length, 1002);
    clock.advance(1000); // forgotten within a second of J
    assert.equal(layer.size.server, 2); // the two new ones, not answered yet
    assert.equal(clock.pendingTimers, 0);
  });

  it('a response with UTF-8 text is resent byte for byte', () => {
    const { sent, passedUp, layer } = setup();
    layer.receiveRequest(request('MESSAGE', 'z9hG4bK-u'));
    const { req, tx } = passedUp[0]!;
    const res = createResponse(req, 200);
    res.headers.set('contact', '"Zoë ☎ Njeri" <sip:zoe@example.com>');
    layer.respond(tx, res);
    layer.receiveRequest(request('MESSAGE', 'z9hG4bK-u'));
    assert.equal(sent.length, 2);
    assert.ok(sent[1]!.equals(res.toBuffer()));
    assert.ok(sent[0]!.equals(sent[1]!));
  });

  it('each kept response expires Timer J after its own answer', () => {
    const { clock, passedUp, layer, answerAll } = setup();
    layer.receiveRequest(request('OPTIONS', 'z9hG4bK-a'));
    answerAll();
    clock.advance(J / 2);
    layer.receiveRequest(request('OPTIONS', 'z9hG4bK-b'));
    answerAll();
    clock.advance(J / 2);
    layer.receiveRequest(request('OPTIONS', 'z9hG4bK-a'));
    layer.receiveRequest(request('OPTIONS', 'z9hG4bK-b'));
    assert.deepEqual(
      passedUp.map(({ req }) => req.topVia?.params.get('branch')),
      ['z9hG4bK-a', 'z9hG4bK-b', 'z9hG4bK-a'],
    );
    clock.advance(J / 2);
    layer.receiveRequest(request('OPTIONS', 'z9hG4bK-b'));
    assert.equal(passedUp.length, 4);
  });

  it('a response that cannot be sent is reported and not kept', async () => {
    const { channel, passedUp, errors, layer, answerAll } = setup();
    layer.receiveRequest(request('OPTIONS', 'z9hG4bK-x'));
    channel.fail = true;
    answerAll();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(errors, [undefined]);
    channel.fail = false;
    layer.receiveRequest(request('OPTIONS', 'z9hG4bK-x'));
    assert.equal(passedUp.length, 2);
  });

  it('over a reliable transport Timer J is zero: nothing is kept', () => {
    const { clock, layer, answerAll } = setup(true);
    layer.receiveRequest(request('OPTIONS', 'z9hG4bK-r'));
    answerAll();
    clock.advance(0);
    assert.equal(layer.size.server, 0);
    assert.equal(clock.pendingTimers, 0);
  });

  it('a response forgotten after Timer J is let go at once (its bytes and channel can be collected)', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const clock = new ManualClock();
    const kept = new CompletedResponses(clock, J, () => {});
    // Made in a function of their own: a local of this (suspended) async function would hold the last one.
    const channels = ((): Array<WeakRef<MessageChannel>> => {
      const refs: Array<WeakRef<MessageChannel>> = [];
      for (let i = 0; i < 100; i++) {
        const channel: MessageChannel = { reliable: false, send: () => Promise.resolve() };
        refs.push(new WeakRef(channel));
        kept.add(`z9hG4bK-${i}`, Buffer.from('SIP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n'), channel);
      }
      return refs;
    })();
    clock.advance(J + 1000);
    assert.equal(kept.size, 0);
    await new Promise((r) => setTimeout(r, 1)); // WeakRef targets are held to the end of the job that made them
    gc();
    assert.equal(channels.filter((c) => c.deref() !== undefined).length, 0);
  });
});
