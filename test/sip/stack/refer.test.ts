import { strict as assert } from 'node:assert';
import {
  createResponse,
  Dialog,
  dialogMatches,
  parseReferTo,
  parseReplaces,
  parseUri,
  ReferSubscription,
  type SipRequest,
} from '../../../sip/stack/index.js';
import type { DialogHost } from '../../../sip/stack/dialog/dialog.js';

function dialogSending(sent: SipRequest[]): Dialog {
  const host: DialogHost = {
    send: async (req) => {
      sent.push(req);
      return createResponse(req, 200);
    },
    sendAck: () => {},
    via: (t) => `SIP/2.0/${t} 127.0.0.1:5060;branch=z9hG4bKr${sent.length}`,
    contact: () => '<sip:127.0.0.1:5060>',
    forget: () => {},
  };
  return new Dialog(host, {
    role: 'uas',
    callId: 'c1',
    localTag: 'l1',
    remoteTag: 'r1',
    localParty: '<sip:1001@a.example>',
    remoteParty: '<sip:1002@a.example>',
    localSeq: 0,
    remoteSeq: 1,
    remoteTarget: parseUri('sip:1002@192.0.2.20:5070')!,
    routeSet: [],
    transport: 'UDP',
  });
}

describe('REFER and Replaces (RFC 3515, RFC 3891)', () => {
  it('a blind Refer-To is read as name-addr or addr-spec, without headers', () => {
    const a = parseReferTo('<sip:1003@acme.example>');
    assert.ok(a && 'user' in a.uri);
    assert.equal(a.uri.user, '1003');
    assert.equal(a.replaces, undefined);
    const b = parseReferTo('sip:+254712345678@acme.example;user=phone');
    assert.ok(b && 'user' in b.uri);
    assert.equal(b.uri.user, '+254712345678');
  });

  it('an attended Refer-To carries the escaped Replaces of the consultation dialog', () => {
    const r = parseReferTo(
      '<sip:1003@acme.example?Replaces=abc%40host%3Bto-tag%3Dt1%3Bfrom-tag%3Df1&Require=replaces>',
    );
    assert.deepEqual(r?.replaces, { callId: 'abc@host', toTag: 't1', fromTag: 'f1', earlyOnly: false });
    assert.ok(r && 'headers' in r.uri === false);
  });

  it('hostile Refer-To values are refused: missing, too long, not a URI, a Replaces without tags', () => {
    assert.equal(parseReferTo(undefined), undefined);
    assert.equal(parseReferTo(`<sip:${'9'.repeat(2000)}@x.example>`), undefined);
    assert.equal(parseReferTo('<not a uri>'), undefined);
    assert.equal(parseReferTo('<sip:1003@acme.example?Replaces=abc%3Bto-tag%3Dt1>'), undefined);
    assert.equal(parseReferTo('<sip:1003@acme.example?Replaces=%E0%A4%A>'), undefined);
  });

  it('Replaces names a dialog by Call-ID and both tags, either way round', () => {
    const r = parseReplaces('c1;from-tag=r1;to-tag=l1;early-only')!;
    assert.equal(r.earlyOnly, true);
    assert.ok(dialogMatches({ callId: 'c1', localTag: 'l1', remoteTag: 'r1' }, r));
    assert.ok(dialogMatches({ callId: 'c1', localTag: 'r1', remoteTag: 'l1' }, r));
    assert.ok(!dialogMatches({ callId: 'c1', localTag: 'l1', remoteTag: 'x' }, r));
    assert.ok(!dialogMatches({ callId: 'c2', localTag: 'l1', remoteTag: 'r1' }, r));
  });

  it('the implicit subscription: NOTIFY 100 Trying (active), then the final status ends it, once', async () => {
    const sent: SipRequest[] = [];
    const sub = new ReferSubscription(dialogSending(sent));
    await sub.progress(100, 'Trying');
    await sub.finish(200, 'OK');
    await sub.finish(503, 'Service Unavailable');
    assert.equal(sent.length, 2);
    assert.deepEqual(
      sent.map((r) => [r.method, r.headers.get('event'), r.headers.get('subscription-state'), r.text]),
      [
        ['NOTIFY', 'refer', 'active;expires=60', 'SIP/2.0 100 Trying\r\n'],
        ['NOTIFY', 'refer', 'terminated;reason=noresource', 'SIP/2.0 200 OK\r\n'],
      ],
    );
    assert.equal(sent[0].headers.get('content-type'), 'message/sipfrag;version=2.0');
    assert.ok(sent[0].headers.get('contact'));
  });

  it('a REFER nobody listens for is answered 501; one the application hears is not', () => {
    const d = dialogSending([]);
    const answered: number[] = [];
    const srv = { send: (s: number) => void answered.push(s) } as never;
    d.receive({ method: 'REFER' } as SipRequest, srv);
    d.on('refer', (_req, s) => s.send(202));
    d.receive({ method: 'REFER' } as SipRequest, srv);
    assert.deepEqual(answered, [501, 202]);
  });
});
