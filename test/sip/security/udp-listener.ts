import dgram from 'node:dgram';
import type { SecurityGate } from '../../../sip/security/index.js';

/**
 * A stand-in for the SIP stack (not ready yet): a UDP socket that puts each request before the gate with a crude
 * parse (request line and a few headers) and answers an allowed request with 200 OK, copying the headers RFC 3261
 * §8.2.6.2 says a response copies. A dropped request gets nothing.
 */
export class GatedUdpListener {
  readonly socket = dgram.createSocket('udp4');
  readonly answered = new Map<string, number>();
  readonly dropped = new Map<string, number>();
  /** Every decision in order (tests send a few hundred requests). */
  readonly log: Array<{ at: number; source: string; decision: 'allow' | 'drop' }> = [];

  constructor(readonly gate: SecurityGate) {
    this.socket.on('message', (msg, rinfo) => this.#onMessage(msg, rinfo));
  }

  listen(port: number, address = '127.0.0.1'): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.once('error', reject);
      this.socket.bind(port, address, () => resolve());
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }

  #onMessage(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    // A banned source costs one Map lookup: no parsing at all.
    if (this.gate.admitSource(rinfo.address) === 'drop') {
      this.log.push({ at: Date.now(), source: rinfo.address, decision: 'drop' });
      this.dropped.set(rinfo.address, (this.dropped.get(rinfo.address) ?? 0) + 1);
      return;
    }
    const text = msg.toString('latin1');
    const lines = text.split('\r\n');
    const m = /^([A-Z]+) \S+ SIP\/2\.0$/.exec(lines[0] ?? '');
    if (!m) return; // a response or garbage: not a request
    const header = (name: string): string[] =>
      lines
        .filter((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`))
        .map((l) => l.slice(name.length + 1).trim());
    const decision = this.gate.inspect({
      source: rinfo.address,
      transport: 'udp',
      method: m[1],
      userAgent: header('User-Agent')[0],
    });
    this.log.push({ at: Date.now(), source: rinfo.address, decision });
    const tally = decision === 'allow' ? this.answered : this.dropped;
    tally.set(rinfo.address, (tally.get(rinfo.address) ?? 0) + 1);
    if (decision === 'drop' || m[1] === 'ACK') return;
    const reply = [
      'SIP/2.0 200 OK',
      ...header('Via').map((v) => `Via: ${v}`),
      `From: ${header('From')[0] ?? ''}`,
      `To: ${header('To')[0] ?? ''};tag=gate`,
      `Call-ID: ${header('Call-ID')[0] ?? ''}`,
      `CSeq: ${header('CSeq')[0] ?? ''}`,
      'Content-Length: 0',
      '',
      '',
    ].join('\r\n');
    this.socket.send(reply, rinfo.port, rinfo.address);
  }
}
