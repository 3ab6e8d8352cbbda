import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { allocateSwitchPorts, startTestSwitch } from '../support/harness.js';

const PORTS = allocateSwitchPorts();

/** RFC 3261 §11.2: a carrier or phone asking the switch what it takes (OPTIONS) is told every method it handles. */
describe('e2e: OPTIONS to the switch', function () {
  this.timeout(30000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  before(async () => {
    ctx = await startTestSwitch(PORTS);
  });
  after(async () => {
    await ctx?.sw.stop();
  });

  it('is answered 200 with Allow naming the in-dialog methods it handles (REFER, INFO, UPDATE, PRACK) and Accept', async () => {
    const sock = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => sock.bind(0, '127.0.0.1', resolve));
    const port = sock.address().port;
    const answer = new Promise<string>((resolve) => sock.once('message', (m) => resolve(m.toString())));
    sock.send(
      Buffer.from(
        `OPTIONS sip:127.0.0.1:${PORTS.sip} SIP/2.0\r\n` +
          `Via: SIP/2.0/UDP 127.0.0.1:${port};branch=z9hG4bK-options-1;rport\r\n` +
          `From: <sip:carrier@127.0.0.1>;tag=o1\r\nTo: <sip:127.0.0.1:${PORTS.sip}>\r\nCall-ID: options-1@127.0.0.1\r\n` +
          `CSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nAccept: application/sdp\r\nContent-Length: 0\r\n\r\n`,
      ),
      PORTS.sip,
      '127.0.0.1',
    );
    const text = await answer;
    sock.close();
    assert.match(text, /^SIP\/2\.0 200 /);
    const allow = /\r\nAllow: *([^\r\n]+)/i.exec(text)?.[1] ?? '';
    const methods = new Set(allow.split(',').map((m) => m.trim()));
    for (const m of [
      'INVITE',
      'ACK',
      'CANCEL',
      'BYE',
      'OPTIONS',
      'REGISTER',
      'SUBSCRIBE',
      'REFER',
      'INFO',
      'UPDATE',
      'PRACK',
    ])
      assert.ok(methods.has(m), `Allow lacks ${m}: ${allow}`);
    assert.match(text, /\r\nAccept: *application\/sdp\r\n/i);
  });
});
