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

function ok(req: string, port: number): Buffer {
  const vias = req
    .split('\r\n')
    .filter((l) => /^via:/i.test(l))
    .join('\r\n');
  const to = header(req, 'to');
  return Buffer.from(
    `SIP/2.0 200 OK\r\n${vias}\r\nFrom: ${header(req, 'from')}\r\nTo: ${to.includes('tag=') ? to : `${to};tag=callee`}\r\n` +
      `Call-ID: ${header(req, 'call-id')}\r\nCSeq: ${header(req, 'cseq')}\r\nContact: <sip:bob@127.0.0.1:${port}>\r\n` +
      `Content-Type: application/sdp\r\nContent-Length: ${Buffer.byteLength(SDP_B)}\r\n\r\n${SDP_B}`,
  );
}

describe('user agent: the ACK of an INVITE 2xx, again for each retransmission (RFC 3261 §13.2.2.4)', function () {
  this.timeout(10000);
  const agents = new Agents();
  afterEach(() => agents.closeAll());

  for (const which of ['the initial INVITE', 'a re-INVITE']) {
    it(`${which}: every retransmitted 2xx gets the ACK again`, async () => {
      const ua = await agents.make({}, { udp: true, tcp: false });
      const callee = dgram.createSocket('udp4');
      await new Promise<void>((resolve) => callee.bind(0, '127.0.0.1', resolve));
      const port = callee.address().port;
      const uaPort = ua.address('UDP')!.port;
      const inbox: string[] = [];
      let wake: (() => void) | undefined;
      callee.on('message', (m) => {
        inbox.push(m.toString());
        wake?.();
      });
      /** The next datagram whose first line starts with `start`. */
      const next = async (start: string): Promise<string> => {
        for (;;) {
          const i = inbox.findIndex((m) => m.startsWith(start));
          if (i >= 0) return inbox.splice(i, 1)[0]!;
          await new Promise<void>((resolve) => (wake = resolve));
        }
      };
      const send = (b: Buffer) => callee.send(b, uaPort, '127.0.0.1');
      try {
        const placed = ua.createUAC(`sip:bob@127.0.0.1:${port}`, { localSdp: SDP_A });
        const invite = await next('INVITE ');
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
      } finally {
        callee.close();
        await once(callee, 'close').catch(() => undefined);
      }
    });
  }
});
