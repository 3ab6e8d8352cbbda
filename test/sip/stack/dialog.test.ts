import { strict as assert } from 'node:assert';
import { Dialog, parseUri, type SipRequest, type Target } from '../../../sip/stack/index.js';
import type { DialogHost } from '../../../sip/stack/dialog/dialog.js';
import { Agents, SDP_A, SDP_B, uriOf, waitFor } from './helpers.js';

function fakeHost(sent: Array<{ req: SipRequest; target: Target }>): DialogHost {
  return {
    send: async (req, target) => {
      sent.push({ req, target });
      const { createResponse } = await import('../../../sip/stack/index.js');
      return createResponse(req, 200);
    },
    sendAck: (req, target) => sent.push({ req, target }),
    via: (t) => `SIP/2.0/${t} 127.0.0.1:5060;branch=z9hG4bKtest${sent.length}`,
    contact: () => '<sip:127.0.0.1:5060>',
    forget: () => {},
  };
}

function uacDialog(sent: Array<{ req: SipRequest; target: Target }>, routeSet: string[] = []): Dialog {
  return new Dialog(fakeHost(sent), {
    role: 'uac',
    callId: 'c1',
    localTag: 'l1',
    remoteTag: 'r1',
    localParty: '<sip:alice@a.example>',
    remoteParty: '<sip:bob@b.example>',
    localSeq: 1,
    remoteSeq: undefined,
    remoteTarget: parseUri('sip:bob@192.0.2.20:5070')!,
    routeSet,
    transport: 'UDP',
  });
}

describe('dialogs (RFC 3261 §12)', () => {
  it('§12.2.1.1: in-dialog requests carry the tags, the next CSeq and the route set; the next hop is the first loose route', async () => {
    const sent: Array<{ req: SipRequest; target: Target }> = [];
    const d = uacDialog(sent, ['<sip:proxy1.example:5080;lr>', '<sip:proxy2.example;lr>']);
    await d.request('INFO');
    await d.request('INFO');
    const [first, second] = sent.map((s) => s.req);
    assert.equal(first.cseq.seq, 2);
    assert.equal(second.cseq.seq, 3);
    assert.equal(first.fromTag, 'l1');
    assert.equal(first.toTag, 'r1');
    assert.deepEqual(first.headers.getAll('route'), ['<sip:proxy1.example:5080;lr>', '<sip:proxy2.example;lr>']);
    assert.equal(String(first.uri && 'host' in first.uri ? first.uri.host : ''), '192.0.2.20');
    assert.deepEqual(sent[0].target, { transport: 'UDP', host: 'proxy1.example', port: 5080, flowId: undefined });
  });

  it('§13.2.2.4: the ACK of a re-INVITE keeps the INVITE CSeq number', async () => {
    const sent: Array<{ req: SipRequest; target: Target }> = [];
    const d = uacDialog(sent);
    await d.request('INVITE', { body: SDP_A });
    const [invite, ack] = sent.map((s) => s.req);
    assert.equal(ack.method, 'ACK');
    assert.equal(ack.cseq.seq, invite.cseq.seq);
  });

  it('§12.2.2: a request with a CSeq lower than the last one is refused with 500', () => {
    const d = uacDialog([]);
    const req = (seq: number) => ({ method: 'INFO', cseq: { seq, method: 'INFO' } }) as unknown as SipRequest;
    assert.equal(d.checkSequence(req(10)), null);
    assert.equal(d.checkSequence(req(11)), null);
    assert.equal(d.checkSequence(req(11)), 500);
    assert.equal(d.checkSequence(req(3)), 500);
  });

  it('a BYE on a terminated dialog is a no-op; requests on it reject with a typed 481 error', async () => {
    const d = uacDialog([]);
    await d.bye();
    await d.bye();
    await assert.rejects(
      d.request('INFO'),
      (e: { code?: string; status?: number }) => e.code === 'SIP_DIALOG_TERMINATED' && e.status === 481,
    );
  });
});

describe('in-dialog requests between two agents', function () {
  this.timeout(10000);
  const agents = new Agents();
  afterEach(() => agents.closeAll());

  it('UPDATE with SDP is answered with the local SDP by default (RFC 3311)', async () => {
    const [a, b] = [await agents.make(), await agents.make()];
    const uasP = waitFor<Dialog>((done) =>
      a.onRequest('INVITE', async (req) => done(await a.createUAS(req, { localSdp: SDP_B }))),
    );
    const uac = await b.createUAC(uriOf(a), { localSdp: SDP_A });
    const uas = await uasP;
    const res = await uac.request('UPDATE', { body: SDP_A.replace('16000', '16020') });
    assert.equal(res.status, 200);
    assert.equal(res.text, SDP_B);
    assert.match(uas.remoteSdp ?? '', /16020/);
    await uas.bye();
  });
});
