import { strict as assert } from 'node:assert';
import { ManualClock } from '../../../sip/stack/clock.js';
import { createResponse, parseMessage, SipRequest, type SipMessage } from '../../../sip/stack/message/index.js';
import {
  DEFAULT_TIMER_SETTINGS,
  InviteClientTransaction,
  InviteServerTransaction,
  NonInviteClientTransaction,
  NonInviteServerTransaction,
  TransactionLayer,
  TransactionState as S,
  type ClientTransactionUser,
  type MessageChannel,
  type TransactionContext,
} from '../../../sip/stack/transaction/index.js';
import { SipTransportError } from '../../../sip/stack/errors.js';

const T1 = DEFAULT_TIMER_SETTINGS.T1;
const T2 = DEFAULT_TIMER_SETTINGS.T2;
const T4 = DEFAULT_TIMER_SETTINGS.T4;

function request(method: string, branch = 'z9hG4bK-1'): SipRequest {
  const raw =
    `${method} sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=${branch}\r\n` +
    `From: <sip:alice@example.com>;tag=a1\r\nTo: <sip:bob@example.com>\r\nCall-ID: c1\r\n` +
    `CSeq: 1 ${method}\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n`;
  const r = parseMessage(Buffer.from(raw));
  assert.ok(r.ok && r.message instanceof SipRequest);
  return r.message;
}

class FakeChannel implements MessageChannel {
  sent: Array<{ at: number; msg: SipMessage }> = [];
  fail = false;
  constructor(
    readonly clock: ManualClock,
    readonly reliable = false,
  ) {}
  send(msg: SipMessage): Promise<void> {
    this.sent.push({ at: this.clock.now(), msg });
    return this.fail ? Promise.reject(new SipTransportError('connection reset')) : Promise.resolve();
  }
  times(): number[] {
    return this.sent.map((s) => s.at);
  }
}

function setup(reliable = false) {
  const clock = new ManualClock();
  const channel = new FakeChannel(clock, reliable);
  let terminated = 0;
  const ctx: TransactionContext = {
    clock,
    timers: DEFAULT_TIMER_SETTINGS,
    channel,
    onTerminated: () => terminated++,
  };
  const events: string[] = [];
  const user: ClientTransactionUser = {
    onResponse: (r) => events.push(`response ${r.status}`),
    onTimeout: () => events.push('timeout'),
    onTransportError: (e) => events.push(`transport ${e.code}`),
  };
  return { clock, channel, ctx, user, events, terminated: () => terminated };
}

describe('INVITE client transaction (RFC 3261 §17.1.1)', () => {
  it('§17.1.1.2: over UDP, Timer A retransmits at T1, 2T1, 4T1 ... and Timer B times out at 64*T1', () => {
    const { clock, channel, ctx, user, events } = setup();
    const tx = new InviteClientTransaction('x', request('INVITE'), ctx, user);
    tx.start();
    clock.advance(64 * T1);
    assert.deepEqual(channel.times(), [0, T1, 3 * T1, 7 * T1, 15 * T1, 31 * T1, 63 * T1]);
    assert.deepEqual(events, ['timeout']);
    assert.equal(tx.state, S.Terminated);
  });

  it('§17.1.1.2: over a reliable transport Timer A is not started', () => {
    const { clock, channel, ctx, user } = setup(true);
    new InviteClientTransaction('x', request('INVITE'), ctx, user).start();
    clock.advance(10 * T1);
    assert.equal(channel.sent.length, 1);
  });

  it('§17.1.1.2: a provisional response stops retransmission and moves to Proceeding', () => {
    const { clock, channel, ctx, user, events } = setup();
    const inv = request('INVITE');
    const tx = new InviteClientTransaction('x', inv, ctx, user);
    tx.start();
    tx.receiveResponse(createResponse(inv, 180, undefined, 'b1'));
    clock.advance(10 * T1);
    assert.equal(channel.sent.length, 1);
    assert.equal(tx.state, S.Proceeding);
    assert.deepEqual(events, ['response 180']);
  });

  it('§17.1.1.3: a non-2xx is ACKed with the INVITE branch and the response To tag; a retransmission is re-ACKed, not passed up; Timer D ends it', () => {
    const { clock, channel, ctx, user, events } = setup();
    const inv = request('INVITE');
    const tx = new InviteClientTransaction('x', inv, ctx, user);
    tx.start();
    const busy = createResponse(inv, 486, undefined, 'b1');
    tx.receiveResponse(busy);
    tx.receiveResponse(busy);
    const acks = channel.sent.filter((s) => s.msg instanceof SipRequest && s.msg.method === 'ACK');
    assert.equal(acks.length, 2);
    const ack = acks[0].msg as SipRequest;
    assert.equal(ack.topVia?.params.get('branch'), 'z9hG4bK-1');
    assert.equal(ack.toTag, 'b1');
    assert.equal(ack.cseq.seq, 1);
    assert.deepEqual(events, ['response 486']);
    assert.equal(tx.state, S.Completed);
    clock.advance(32000);
    assert.equal(tx.state, S.Terminated);
  });

  it('RFC 6026 §7.2: a 2xx moves to Accepted, a retransmitted 2xx is passed up, Timer M ends it', () => {
    const { clock, ctx, user, events } = setup();
    const inv = request('INVITE');
    const tx = new InviteClientTransaction('x', inv, ctx, user);
    tx.start();
    const ok = createResponse(inv, 200, undefined, 'b1');
    tx.receiveResponse(ok);
    tx.receiveResponse(ok);
    assert.deepEqual(events, ['response 200', 'response 200']);
    assert.equal(tx.state, S.Accepted);
    clock.advance(64 * T1);
    assert.equal(tx.state, S.Terminated);
  });

  it('§17.1.1.2: a transport error terminates the transaction and informs the TU', async () => {
    const { channel, ctx, user, events } = setup(true);
    channel.fail = true;
    const tx = new InviteClientTransaction('x', request('INVITE'), ctx, user);
    tx.start();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(events, ['transport SIP_TRANSPORT']);
    assert.equal(tx.state, S.Terminated);
  });
});

describe('non-INVITE client transaction (RFC 3261 §17.1.2)', () => {
  it('§17.1.2.2: Timer E doubles up to T2, Timer F times out at 64*T1', () => {
    const { clock, channel, ctx, user, events } = setup();
    new NonInviteClientTransaction('x', request('OPTIONS'), ctx, user).start();
    clock.advance(64 * T1);
    const t = channel.times();
    const gaps = t.slice(1).map((v, i) => v - t[i]);
    assert.deepEqual(gaps.slice(0, 5), [T1, 2 * T1, 4 * T1, T2, T2]);
    assert.deepEqual(events, ['timeout']);
  });

  it('§17.1.2.2: in Proceeding the request is retransmitted every T2', () => {
    const { clock, channel, ctx, user } = setup();
    const req = request('OPTIONS');
    const tx = new NonInviteClientTransaction('x', req, ctx, user);
    tx.start();
    tx.receiveResponse(createResponse(req, 100));
    clock.advance(T1 + 2 * T2);
    const t = channel.times();
    assert.deepEqual(t, [0, T1, T1 + T2, T1 + 2 * T2]);
  });

  it('§17.1.2.2: a final response is passed up once; Timer K (T4 over UDP) ends Completed', () => {
    const { clock, ctx, user, events } = setup();
    const req = request('OPTIONS');
    const tx = new NonInviteClientTransaction('x', req, ctx, user);
    tx.start();
    tx.receiveResponse(createResponse(req, 200));
    tx.receiveResponse(createResponse(req, 200));
    assert.deepEqual(events, ['response 200']);
    clock.advance(T4 - 1);
    assert.equal(tx.state, S.Completed);
    clock.advance(1);
    assert.equal(tx.state, S.Terminated);
  });
});

describe('INVITE server transaction (RFC 3261 §17.2.1)', () => {
  function ist(reliable = false) {
    const s = setup(reliable);
    const acks: string[] = [];
    const inv = request('INVITE');
    const tx = new InviteServerTransaction('x', inv, s.ctx, {
      onTransportError: () => acks.push('transport'),
      onAckTimeout: () => acks.push('ack-timeout'),
    });
    return { ...s, inv, tx, acks };
  }

  it('§17.2.1: sends 100 Trying when the TU has not answered within 200 ms', () => {
    const { clock, channel } = ist();
    clock.advance(199);
    assert.equal(channel.sent.length, 0);
    clock.advance(1);
    assert.equal((channel.sent[0].msg as { status: number }).status, 100);
  });

  it('§17.2.1: a retransmitted INVITE is answered with the last provisional response', () => {
    const { tx, inv, channel } = ist();
    tx.respond(createResponse(inv, 180, undefined, 't'));
    tx.receiveRetransmission();
    assert.deepEqual(
      channel.sent.map((s) => (s.msg as { status: number }).status),
      [180, 180],
    );
  });

  it('§17.2.1: a non-2xx is retransmitted by Timer G (T1 doubling to T2) until Timer H reports no ACK', () => {
    const { tx, inv, channel, clock, acks } = ist();
    tx.respond(createResponse(inv, 486, undefined, 't'));
    clock.advance(64 * T1);
    const t = channel.times();
    const gaps = t.slice(1).map((v, i) => v - t[i]);
    assert.deepEqual(gaps.slice(0, 5), [T1, 2 * T1, 4 * T1, T2, T2]);
    assert.deepEqual(acks, ['ack-timeout']);
    assert.equal(tx.state, S.Terminated);
  });

  it('§17.2.1: the ACK moves Completed to Confirmed; Timer I (T4) then terminates', () => {
    const { tx, inv, clock, channel } = ist();
    tx.respond(createResponse(inv, 486, undefined, 't'));
    tx.receiveAck();
    assert.equal(tx.state, S.Confirmed);
    const sent = channel.sent.length;
    clock.advance(T4);
    assert.equal(tx.state, S.Terminated);
    assert.equal(channel.sent.length, sent, 'no retransmission after the ACK');
  });

  it('§17.2.1: over TCP Timer G is not started and Timer I is zero', () => {
    const { tx, inv, clock, channel } = ist(true);
    tx.respond(createResponse(inv, 486, undefined, 't'));
    clock.advance(10 * T1);
    assert.equal(channel.sent.length, 1);
    tx.receiveAck();
    clock.advance(0);
    assert.equal(tx.state, S.Terminated);
  });

  it('§13.3.1.4 / RFC 6026 §7.1: a 2xx is retransmitted until its ACK, then Timer L ends Accepted', () => {
    const { tx, inv, clock, channel, acks } = ist();
    tx.respond(createResponse(inv, 200, undefined, 't'));
    assert.equal(tx.state, S.Accepted);
    clock.advance(3 * T1);
    assert.deepEqual(channel.times(), [0, T1, 3 * T1]);
    tx.receive2xxAck();
    clock.advance(64 * T1);
    assert.equal(channel.sent.length, 3);
    assert.equal(tx.state, S.Terminated);
    assert.deepEqual(acks, []);
  });

  it('§13.3.1.4: a 2xx never ACKed is reported so the TU can send BYE', () => {
    const { tx, inv, clock, acks } = ist();
    tx.respond(createResponse(inv, 200, undefined, 't'));
    clock.advance(64 * T1);
    assert.deepEqual(acks, ['ack-timeout']);
  });
});

describe('non-INVITE server transaction (RFC 3261 §17.2.2)', () => {
  it('§17.2.2: retransmissions are absorbed in Trying and answered with the final response in Completed; Timer J ends it', () => {
    const { ctx, channel, clock } = setup();
    const req = request('OPTIONS');
    const tx = new NonInviteServerTransaction('x', req, ctx, { onTransportError: () => {} });
    tx.receiveRetransmission();
    assert.equal(channel.sent.length, 0);
    tx.respond(createResponse(req, 200));
    tx.receiveRetransmission();
    assert.equal(channel.sent.length, 2);
    clock.advance(64 * T1);
    assert.equal(tx.state, S.Terminated);
  });

  it('refuses an illegal state move (a response after Terminated is ignored, not a crash)', () => {
    const { ctx, channel } = setup(true);
    const req = request('OPTIONS');
    const tx = new NonInviteServerTransaction('x', req, ctx, { onTransportError: () => {} });
    tx.terminate();
    tx.respond(createResponse(req, 200));
    assert.equal(channel.sent.length, 0);
  });
});

describe('transaction layer matching (RFC 3261 §17.1.3, §17.2.3)', () => {
  function layer() {
    const clock = new ManualClock();
    const channel = new FakeChannel(clock);
    const seen: string[] = [];
    const l = new TransactionLayer({
      clock,
      timers: DEFAULT_TIMER_SETTINGS,
      responseChannel: () => channel,
      user: { onRequest: (r, tx) => seen.push(`${r.method}${tx ? '' : ' (no tx)'}`) },
    });
    return { l, seen, channel, clock };
  }

  it('§17.2.3: a retransmitted request matches its transaction and is not passed up again', () => {
    const { l, seen } = layer();
    l.receiveRequest(request('OPTIONS'));
    l.receiveRequest(request('OPTIONS'));
    assert.deepEqual(seen, ['OPTIONS']);
  });

  it('§17.2.3: without the magic cookie (RFC 4475 badbranch) requests match the RFC 2543 way', () => {
    const { l, seen } = layer();
    l.receiveRequest(request('OPTIONS', 'z9hG4bK'));
    l.receiveRequest(request('OPTIONS', 'z9hG4bK'));
    l.receiveRequest(request('OPTIONS', '1234'));
    l.receiveRequest(request('OPTIONS', '1234'));
    assert.deepEqual(seen, ['OPTIONS', 'OPTIONS']);
  });

  it('§9.2: a CANCEL finds its INVITE server transaction by branch', () => {
    const { l } = layer();
    l.receiveRequest(request('INVITE'));
    assert.ok(l.findInviteFor(request('CANCEL')));
    assert.equal(l.findInviteFor(request('CANCEL', 'z9hG4bK-other')), undefined);
  });

  it('§17.2.1: the ACK of a non-2xx is absorbed; the ACK of a 2xx stops retransmission and goes up', () => {
    const { l, seen, channel, clock } = layer();
    const inv = request('INVITE');
    l.receiveRequest(inv);
    const tx = l.findInviteFor(inv)!;
    l.respond(tx, createResponse(inv, 200, undefined, 't'));
    const ack = request('ACK', 'z9hG4bK-2');
    l.receiveRequest(ack);
    clock.advance(10 * T1);
    assert.equal(channel.sent.length, 1);
    assert.deepEqual(seen, ['INVITE', 'ACK (no tx)']);
  });

  it('§17.1.3: a response goes to the client transaction of its branch and CSeq method, others are stray', () => {
    const clock = new ManualClock();
    const channel = new FakeChannel(clock);
    const stray: number[] = [];
    const l = new TransactionLayer({
      clock,
      timers: DEFAULT_TIMER_SETTINGS,
      responseChannel: () => channel,
      user: { onRequest: () => {}, onStrayResponse: (r) => stray.push(r.status) },
    });
    const got: number[] = [];
    const req = request('OPTIONS', 'z9hG4bK-c');
    l.sendRequest(req, channel, { onResponse: (r) => got.push(r.status), onTimeout() {}, onTransportError() {} });
    l.receiveResponse(createResponse(req, 200));
    l.receiveResponse(createResponse(request('OPTIONS', 'z9hG4bK-zz'), 404));
    assert.deepEqual(got, [200]);
    assert.deepEqual(stray, [404]);
  });
});
