/**
 * RFC 3261 §13.2.2.4: the UAC ACKs every 2xx to its INVITE, retransmissions included (the callee retransmits until an
 * ACK arrives, RFC 3261 §13.3.1.4, and ends the dialog at Timer L without one). A raw UDP socket plays the callee so
 * that it can retransmit at will.
 */
import { strict as assert } from 'node:assert';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { Agents, SDP_A, SDP_B } from './helpers.js';

/** The first line and the named header of a datagram. */
function header(msg: string, name: string): string {
  const line = msg.split('\r\n').find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line ? line.slice(line.indexOf(':') + 1).trim() : '';
}

function ok(req: string, port: number, tag = 'callee', user = 'bob'): Buffer {
  const vias = req
    .split('\r\n')
    .filter((l) => /^via:/i.test(l))
    .join('\r\n');
  const to = header(req, 'to');
  return Buffer.from(
    `SIP/2.0 200 OK\r\n${vias}\r\nFrom: ${header(req, 'from')}\r\nTo: ${to.includes('tag=') ? to : `${to};tag=${tag}`}\r\n` +
      `Call-ID: ${header(req, 'call-id')}\r\nCSeq: ${header(req, 'cseq')}\r\nContact: <sip:${user}@127.0.0.1:${port}>\r\n` +
      `Content-Type: application/sdp\r\nContent-Length: ${Buffer.byteLength(SDP_B)}\r\n\r\n${SDP_B}`,
  );
}

/** A raw UDP callee on loopback: `next` waits for a datagram by its first line ('' after `ms`), `send` answers. */
async function rawCallee(uaPort: number) {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const inbox: string[] = [];
  let wake: (() => void) | undefined;
  socket.on('message', (m) => {
    inbox.push(m.toString());
    wake?.();
  });
  return {
    port: socket.address().port,
    async next(start: string, ms = 2000): Promise<string> {
      const until = Date.now() + ms;
      for (;;) {
        const i = inbox.findIndex((m) => m.startsWith(start));
        if (i >= 0) return inbox.splice(i, 1)[0]!;
        if (Date.now() >= until) return '';
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 50);
        });
      }
    },
    send: (b: Buffer) => socket.send(b, uaPort, '127.0.0.1'),
    async close(): Promise<void> {
      socket.close();
      await once(socket, 'close').catch(() => undefined);
    },
  };
}

describe('user agent: the ACK of an INVITE 2xx, again for each retransmission (RFC 3261 §13.2.2.4)', function () {
  this.timeout(10000);
  const agents = new Agents();
  const callees: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const c of callees.splice(0)) await c.close();
    await agents.closeAll();
  });

  /** An agent calling a raw callee: the call's promise and the INVITE as the callee got it. */
  async function calling() {
    const ua = await agents.make({}, { udp: true, tcp: false });
    const callee = await rawCallee(ua.address('UDP')!.port);
    callees.push(callee);
    const placed = ua.createUAC(`sip:bob@127.0.0.1:${callee.port}`, { localSdp: SDP_A });
    return { ...callee, placed, invite: await callee.next('INVITE ') };
  }

  for (const which of ['the initial INVITE', 'a re-INVITE']) {
    it(`${which}: every retransmitted 2xx gets the ACK again`, async () => {
      const { port, next, send, placed, invite } = await calling();
      send(ok(invite, port));
      const dialog = await placed;
      await next('ACK ');
      let answered = ok(invite, port);
      if (which === 'a re-INVITE') {
        const modified = dialog.modify(SDP_A);
        const reinvite = await next('INVITE ');
        answered = ok(reinvite, port);
        send(answered);
        await modified;
        const ack = await next('ACK ');
        assert.equal(header(ack, 'cseq'), `${header(reinvite, 'cseq').split(' ')[0]} ACK`);
      }
      for (let i = 0; i < 2; i++) {
        send(answered); // the callee did not see the ACK: its 2xx again
        const again = await Promise.race([
          next('ACK '),
          new Promise<string>((resolve) => setTimeout(() => resolve(''), 2000)),
        ]);
        assert.ok(again.startsWith('ACK '), `no ACK for retransmission ${i + 1} of the 2xx`);
      }
      void dialog.bye().catch(() => undefined);
      send(ok(await next('BYE '), port));
    });
  }

  it("another fork's 2xx gets its own ACK and a BYE, once per fork; the call stays on the first (a proxy downstream forked)", async () => {
    const { port, next, send, placed, invite } = await calling();
    send(ok(invite, port, 'fork-a', 'alice-phone'));
    const dialog = await placed;
    const ackA = await next('ACK ');
    assert.match(header(ackA, 'to'), /tag=fork-a/);
    assert.ok(ackA.startsWith('ACK sip:alice-phone@'), ackA.split('\r\n')[0]);
    // The second fork's 2xx, and its retransmission (its ACK lost): an ACK each time, one BYE, both to fork B.
    send(ok(invite, port, 'fork-b', 'bob-phone'));
    const ackB = await next('ACK ');
    assert.match(header(ackB, 'to'), /tag=fork-b/, 'the ACK names the fork that answered');
    assert.ok(ackB.startsWith('ACK sip:bob-phone@'), `the ACK goes to fork B's Contact: ${ackB.split('\r\n')[0]}`);
    assert.equal(header(ackB, 'cseq'), `${header(invite, 'cseq').split(' ')[0]} ACK`);
    const bye = await next('BYE ');
    assert.match(header(bye, 'to'), /tag=fork-b/, 'the BYE ends fork B');
    assert.ok(bye.startsWith('BYE sip:bob-phone@'));
    send(ok(bye, port, 'fork-b'));
    send(ok(invite, port, 'fork-b', 'bob-phone'));
    assert.match(header(await next('ACK '), 'to'), /tag=fork-b/, "fork B's retransmission gets its ACK again");
    send(ok(invite, port, 'fork-a', 'alice-phone'));
    assert.match(header(await next('ACK '), 'to'), /tag=fork-a/, "fork A's retransmission gets fork A's ACK");
    assert.equal(await next('BYE ', 300), '', 'one BYE for fork B, none for the call');
    assert.equal(dialog.state, 'confirmed');
    assert.equal(dialog.remoteTag, 'fork-a');
    void dialog.bye().catch(() => undefined);
    send(ok(await next('BYE '), port, 'fork-a'));
  });
});
