/**
 * Transactions that only wait out a timer after their work is done are kept by the transaction layer as a key (and
 * what a retransmission gets), not as objects (sip/stack/transaction/completed-responses.ts): an INVITE server
 * transaction acknowledged in Accepted (RFC 6026 §7.1, Timer L), an INVITE client transaction whose 2xx the TU has
 * ACKed (§7.2, Timer M) and a non-INVITE client transaction in Completed over UDP (RFC 3261 §17.1.2.2, Timer K).
 * What each must still do until its timer: absorb, or answer a retransmitted 2xx with the same ACK.
 */
import { strict as assert } from 'node:assert';
import { ManualClock } from '../../../sip/stack/clock.js';
import {
  createResponse,
  parseMessage,
  SipRequest,
  SipResponse,
  type SipMessage,
} from '../../../sip/stack/message/index.js';
import {
  DEFAULT_TIMER_SETTINGS,
  InviteClientTransaction,
  TransactionLayer,
  TransactionState as S,
  type MessageChannel,
  type ServerTransaction,
} from '../../../sip/stack/transaction/index.js';

const T1 = DEFAULT_TIMER_SETTINGS.T1;
const L = 64 * T1; // = M
const K = DEFAULT_TIMER_SETTINGS.T4;

function parse<T extends SipMessage>(raw: string): T {
  const r = parseMessage(Buffer.from(raw));
  assert.ok(r.ok);
  return r.message as T;
}

function request(method: string, branch: string, cseq = `1 ${method}`, toTag = ''): SipRequest {
  return parse<SipRequest>(
    `${method} sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=${branch}\r\n` +
      `From: <sip:alice@example.com>;tag=a1\r\nTo: <sip:bob@example.com>${toTag}\r\nCall-ID: c-1\r\n` +
      `CSeq: ${cseq}\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n`,
  );
}

/** A response to `req` as it comes back from the network (its own parse, so it is not the object sent). */
function answer(req: SipRequest, status: number): SipResponse {
  return parse<SipResponse>(createResponse(req, status, undefined, 'b1').toString());
}

function setup() {
  const clock = new ManualClock();
  const sent: string[] = [];
  const channel: MessageChannel = {
    reliable: false,
    send(msg: SipMessage) {
      sent.push(msg.toBuffer().toString().split('\r\n')[0]!);
      return Promise.resolve();
    },
  };
  const passedUp: Array<{ req: SipRequest; tx: ServerTransaction | null }> = [];
  const strays: SipResponse[] = [];
  const ackTimeouts: ServerTransaction[] = [];
  const layer = new TransactionLayer({
    clock,
    timers: DEFAULT_TIMER_SETTINGS,
    responseChannel: () => channel,
    user: {
      onRequest: (req, tx) => void passedUp.push({ req, tx }),
      onStrayResponse: (res) => void strays.push(res),
      onAckTimeout: (tx) => void ackTimeouts.push(tx),
    },
  });
  return { clock, sent, channel, passedUp, strays, ackTimeouts, layer };
}

describe('transactions kept by their key once only their timer is left', () => {
  it('an INVITE server transaction ends at its ACK; retransmitted INVITEs are absorbed until Timer L', () => {
    const { clock, sent, passedUp, ackTimeouts, layer } = setup();
    layer.receiveRequest(request('INVITE', 'z9hG4bK-i1'));
    const tx = passedUp[0]!.tx!;
    layer.respond(tx, createResponse(passedUp[0]!.req, 200, undefined, 'b1'));
    clock.advance(T1); // no ACK yet: the 2xx goes again (RFC 3261 §13.3.1.4)
    assert.deepEqual(sent, ['SIP/2.0 200 OK', 'SIP/2.0 200 OK']);
    assert.equal(tx.state, S.Accepted);

    layer.receiveRequest(request('ACK', 'z9hG4bK-a1', '1 ACK', ';tag=b1'));
    assert.equal(tx.state, S.Terminated, 'nothing of the transaction is held once acknowledged');
    assert.equal(passedUp.length, 2, 'the ACK goes to the dialog');
    assert.equal(layer.size.server, 1, 'still counted: it absorbs retransmissions');
    clock.advance(10 * T1);
    assert.equal(sent.length, 2, 'the 2xx is not sent again after its ACK');

    clock.advance(L - 11 * T1 - 1);
    layer.receiveRequest(request('INVITE', 'z9hG4bK-i1'));
    assert.equal(passedUp.length, 2, 'a retransmitted INVITE is absorbed, not a new call');
    assert.equal(sent.length, 2, 'and not answered (RFC 6026 §7.1)');

    clock.advance(1); // Timer L
    layer.receiveRequest(request('INVITE', 'z9hG4bK-i1'));
    assert.equal(passedUp.length, 3, 'after Timer L the same INVITE is a new request');
    assert.equal(ackTimeouts.length, 0);
  });

  it('a CANCEL after the acknowledged 2xx finds no INVITE; an INVITE never ACKed still times out at Timer L', () => {
    const { clock, passedUp, ackTimeouts, layer } = setup();
    layer.receiveRequest(request('INVITE', 'z9hG4bK-i2'));
    layer.respond(passedUp[0]!.tx!, createResponse(passedUp[0]!.req, 200, undefined, 'b1'));
    layer.receiveRequest(request('ACK', 'z9hG4bK-a2', '1 ACK', ';tag=b1'));
    assert.equal(layer.findInviteFor(request('CANCEL', 'z9hG4bK-i2', '1 CANCEL')), undefined);

    layer.receiveRequest(request('INVITE', 'z9hG4bK-i3', '2 INVITE'));
    const unacked = passedUp[2]!.tx!;
    layer.respond(unacked, createResponse(passedUp[2]!.req, 200, undefined, 'b1'));
    clock.advance(L);
    assert.deepEqual(ackTimeouts, [unacked]);
  });

  it('an INVITE client transaction acknowledged by its TU ends; each retransmitted 2xx until Timer M gets the ACK again', () => {
    const { clock, channel, strays, layer } = setup();
    const invite = request('INVITE', 'z9hG4bK-c1');
    const heard: number[] = [];
    const tx = layer.sendRequest(invite, channel, {
      onResponse: (res) => void heard.push(res.status),
      onTimeout: () => assert.fail('no timeout'),
      onTransportError: () => assert.fail('no transport error'),
    });
    assert.ok(tx instanceof InviteClientTransaction);
    layer.receiveResponse(answer(invite, 180));
    layer.receiveResponse(answer(invite, 200));
    assert.deepEqual(heard, [180, 200]);
    let acks = 0;
    assert.equal(
      tx.acknowledged(() => (acks += 1)),
      true,
    );
    assert.equal(tx.state, S.Terminated, 'the request and the TU are let go');
    assert.equal(layer.size.client, 1);

    layer.receiveResponse(answer(invite, 200));
    layer.receiveResponse(answer(invite, 200));
    assert.equal(acks, 2, 'one ACK for each retransmitted 2xx (§13.2.2.4)');
    layer.receiveResponse(answer(invite, 180));
    assert.equal(acks, 2, 'a late provisional is absorbed, not ACKed');
    assert.deepEqual(heard, [180, 200], 'the TU hears nothing more');
    assert.equal(strays.length, 0);

    clock.advance(L); // Timer M
    layer.receiveResponse(answer(invite, 200));
    assert.equal(acks, 2);
    assert.equal(strays.length, 1, 'after Timer M a 2xx matches nothing');
    assert.equal(
      tx.acknowledged(() => {}),
      false,
      'only a transaction in Accepted hands over',
    );
  });

  it('a non-INVITE client transaction over UDP ends at its final response; retransmissions are absorbed until Timer K', () => {
    const { clock, channel, strays, layer } = setup();
    const client = { onTimeout: () => assert.fail('no timeout'), onTransportError: () => assert.fail('no error') };
    // An acknowledged INVITE first, kept until Timer M: the BYE's entry behind it is still forgotten at K.
    const invite = request('INVITE', 'z9hG4bK-c2');
    const itx = layer.sendRequest(invite, channel, { ...client, onResponse: () => {} });
    layer.receiveResponse(answer(invite, 200));
    assert.ok(itx instanceof InviteClientTransaction && itx.acknowledged(() => {}));

    const bye = request('BYE', 'z9hG4bK-b1', '2 BYE', ';tag=b1');
    const heard: number[] = [];
    const tx = layer.sendRequest(bye, channel, { ...client, onResponse: (res) => void heard.push(res.status) });
    layer.receiveResponse(answer(bye, 200));
    assert.equal(tx.state, S.Terminated);
    assert.deepEqual(heard, [200]);
    assert.equal(layer.size.client, 2);
    clock.advance(K - 1);
    layer.receiveResponse(answer(bye, 200));
    assert.deepEqual(heard, [200], 'a retransmitted final response is absorbed (§17.1.2.2)');
    assert.equal(strays.length, 0);
    clock.advance(1); // Timer K
    layer.receiveResponse(answer(bye, 200));
    assert.equal(strays.length, 1);
    clock.advance(1000);
    assert.equal(layer.size.client, 1, 'forgotten within a second of K, not at M with the INVITE ahead of it');
  });
});
