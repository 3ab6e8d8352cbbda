import assert from 'node:assert/strict';
import { parseMessage, parseUri, SipRequest, type SipUri } from '../../sip/stack/index.js';
import { SwitchNames } from '../../sip/switch-names.js';

/** A request that arrived on 0.0.0.0:5060 (the switch listening on every address). */
function arrived(localAddress = '0.0.0.0', localPort = 5060): SipRequest {
  const raw =
    'REGISTER sip:acct.sip.example.net SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.9:5062;branch=z9hG4bKr1\r\n' +
    'From: <sip:1001@acct.sip.example.net>;tag=1\r\nTo: <sip:1001@acct.sip.example.net>\r\nCall-ID: r1\r\n' +
    'CSeq: 1 REGISTER\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n';
  const r = parseMessage(Buffer.from(raw));
  assert.ok(r.ok && r.message instanceof SipRequest);
  r.message.source = { transport: 'UDP', address: '10.0.0.9', port: 5062, flowId: 'f', localAddress, localPort };
  return r.message;
}

describe('sip: the names of this switch (a digest-uri may name the switch)', () => {
  let reads = 0;
  let now = 0;
  const names = new SwitchNames({
    publicHost: 'Switch.Example.NET',
    domain: 'sip.example.net',
    listenHost: '0.0.0.0',
    ports: [5060, 5061, 0, 0],
    localAddresses: () => (reads++, ['127.0.0.1', '192.0.2.10', '::1', 'fe80::1']),
    clock: { now: () => now },
  });
  const says = (uri: string, req = arrived()) => names.namesSwitch(parseUri(uri) as SipUri, req);

  it("the box's addresses (the switch listens on 0.0.0.0), with no port or one of its SIP ports", () => {
    for (const uri of [
      'sip:127.0.0.1:5060',
      'sip:127.0.0.1',
      'sip:192.0.2.10:5061',
      'sip:[::1]:5060',
      'sips:[fe80::1]',
    ]) {
      assert.equal(says(uri), true, uri);
    }
  });

  it('the public host, sip.domain, an account domain under it and a bare account uuid', () => {
    for (const uri of [
      'sip:switch.example.net',
      'sip:switch.example.net:5060',
      'sip:sip.example.net',
      'sip:acme.sip.example.net',
      'sip:508f2e4c-1b7a-4c1e-9d3f-2a6b8c0d1e2f',
    ]) {
      assert.equal(says(uri), true, uri);
    }
  });

  it('another host, a deeper name under the domain, a port the switch does not listen on, 0.0.0.0 itself: no', () => {
    for (const uri of [
      'sip:other.example.org',
      'sip:192.0.2.11:5060',
      'sip:a.b.sip.example.net',
      'sip:example.net',
      'sip:127.0.0.1:5070',
      'sip:0.0.0.0:5060',
      'sip:[::]:5060',
    ]) {
      assert.equal(says(uri), false, uri);
    }
  });

  it('the port the request arrived on counts as one of the switch’s own', () => {
    assert.equal(says('sip:127.0.0.1:5090'), false);
    assert.equal(says('sip:127.0.0.1:5090', arrived('0.0.0.0', 5090)), true);
  });

  it("the box's addresses are read again after a minute, not at every request", () => {
    const before = reads;
    says('sip:127.0.0.1');
    says('sip:192.0.2.10');
    assert.equal(reads, before, 'remembered');
    now += 61_000;
    says('sip:127.0.0.1');
    says('sip:192.0.2.10');
    assert.equal(reads, before + 1, 'read once more after a minute');
  });
});
