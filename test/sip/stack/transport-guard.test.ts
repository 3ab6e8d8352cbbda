/**
 * The transports ask the application's admitSource before parsing anything (a banned source's datagram is not
 * parsed, its connection is closed at accept), hold inbound connections to per-source and total caps, and close
 * a connection that has not sent one complete message within the first-message deadline.
 */
import { strict as assert } from 'node:assert';
import dgram from 'node:dgram';
import net from 'node:net';
import { WebSocket } from 'ws';
import { UserAgent, type UserAgentOptions } from '../../../sip/stack/index.js';
import { eventually } from '../../support/wait.js';

const OPTIONS = (via: string, callId = 'g1') =>
  `OPTIONS sip:bob@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/${via} 127.0.0.1:9;branch=z9hG4bK${Math.random().toString(36).slice(2)};rport\r\n` +
  `From: <sip:x@127.0.0.1>;tag=1\r\nTo: <sip:bob@127.0.0.1>\r\nCall-ID: ${callId}\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n`;

/** Sends one datagram from `from` and resolves with the answer, or null after `ms`. */
function udpFrom(from: string, port: number, data: string | Buffer, ms = 600): Promise<string | null> {
  const s = dgram.createSocket('udp4');
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      s.close();
      resolve(null);
    }, ms);
    s.on('message', (m) => {
      clearTimeout(t);
      s.close();
      resolve(m.toString());
    });
    s.bind(0, from, () => s.send(data, port, '127.0.0.1'));
  });
}

/** Opens a TCP connection from `from`; `closed` resolves with the ms it lived when the server closes it. */
async function tcpFrom(from: string, port: number): Promise<{ socket: net.Socket; closed: Promise<number> }> {
  const socket = net.connect({ host: '127.0.0.1', port, localAddress: from });
  const start = Date.now();
  const closed = new Promise<number>((r) => socket.once('close', () => r(Date.now() - start)));
  socket.on('error', () => {});
  await new Promise<void>((r) => socket.once('connect', () => r()).once('close', () => r()));
  return { socket, closed };
}

/** Resolves true if the promise settles within ms. */
const settlesWithin = (p: Promise<unknown>, ms: number): Promise<boolean> =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe('transport guard: admission before parsing, connection caps, first-message deadline', function () {
  this.timeout(15000);
  const uas: UserAgent[] = [];
  const sockets: Array<{ destroy(): void }> = [];
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await Promise.all(uas.splice(0).map((u) => u.close()));
  });

  async function agent(opts: UserAgentOptions, ws = false): Promise<UserAgent> {
    const ua = new UserAgent(opts);
    uas.push(ua);
    await ua.listen({
      udp: { host: '127.0.0.1', port: 0 },
      tcp: { host: '127.0.0.1', port: 0 },
      ws: ws ? { host: '127.0.0.1', port: 0 } : undefined,
    });
    return ua;
  }

  it('UDP: a refused source is dropped before parsing (not even a malformed datagram gets its 400)', async () => {
    const asked: string[] = [];
    let admitted = 0;
    const ua = await agent({
      admitSource: (address, transport) => {
        asked.push(`${transport} ${address}`);
        return address !== '127.0.0.2';
      },
      admitRequest: () => (admitted++, true),
    });
    const port = ua.address('UDP')!.port;
    // Parsed, this datagram earns a stateless 400 (the request line is readable, the Via is not).
    const malformed = OPTIONS('UDP').replace(/^Via: .*$/m, 'Via: garbage');
    assert.match((await udpFrom('127.0.0.1', port, malformed)) ?? '', /^SIP\/2.0 400 /, 'parsed and answered');
    assert.equal(await udpFrom('127.0.0.2', port, malformed), null, 'refused source: no 400');
    assert.equal(await udpFrom('127.0.0.2', port, OPTIONS('UDP')), null, 'refused source: no 200');
    assert.match((await udpFrom('127.0.0.3', port, OPTIONS('UDP'))) ?? '', /^SIP\/2.0 200 /);
    assert.equal(admitted, 1, 'only the other source reached admitRequest');
    assert.ok(asked.includes('UDP 127.0.0.2'));
  });

  it('TCP: a refused source is closed at accept; a source refused later is closed on its next message', async () => {
    const banned = new Set(['127.0.0.2']);
    const ua = await agent({ admitSource: (a) => !banned.has(a) });
    const port = ua.address('TCP')!.port;
    const refused = await tcpFrom('127.0.0.2', port);
    sockets.push(refused.socket);
    assert.ok(await settlesWithin(refused.closed, 1000), 'closed at accept without sending anything');

    const other = await tcpFrom('127.0.0.3', port);
    sockets.push(other.socket);
    const reply = new Promise<string>((r) => other.socket.once('data', (d) => r(String(d))));
    other.socket.write(OPTIONS('TCP'));
    assert.match(await reply, /^SIP\/2.0 200 /);
    banned.add('127.0.0.3');
    other.socket.write(OPTIONS('TCP', 'g2'));
    assert.ok(await settlesWithin(other.closed, 1000), 'closed once refused');
  });

  it('TCP: a connection without a complete message within firstMessageMs is closed; one that sent one is kept', async () => {
    const ua = await agent({ connectionLimits: { firstMessageMs: 300 } });
    const port = ua.address('TCP')!.port;
    const idle = await tcpFrom('127.0.0.1', port);
    const partial = await tcpFrom('127.0.0.1', port);
    const good = await tcpFrom('127.0.0.1', port);
    sockets.push(idle.socket, partial.socket, good.socket);
    partial.socket.write(OPTIONS('TCP').slice(0, 60)); // half a header, then silence (slowloris)
    const reply = new Promise<string>((r) => good.socket.once('data', (d) => r(String(d))));
    good.socket.write(OPTIONS('TCP'));
    assert.match(await reply, /^SIP\/2.0 200 /);
    const [idleMs, partialMs] = await Promise.all([idle.closed, partial.closed]);
    assert.ok(idleMs >= 250 && idleMs < 2000, `idle closed after ${idleMs} ms`);
    assert.ok(partialMs >= 250 && partialMs < 2000, `partial closed after ${partialMs} ms`);
    assert.equal(await settlesWithin(good.closed, 600), false, 'the connection that sent a message stays open');
  });

  it('TCP: per-source cap (an exempt source is not held to it) and total cap', async () => {
    const ua = await agent({
      connectionLimits: { perSource: 2, total: 5, exempt: (a) => a === '127.0.0.9' },
    });
    const port = ua.address('TCP')!.port;
    const open = async (from: string) => {
      const c = await tcpFrom(from, port);
      sockets.push(c.socket);
      return settlesWithin(c.closed, 400).then((closed) => !closed);
    };
    assert.deepEqual(
      [await open('127.0.0.2'), await open('127.0.0.2'), await open('127.0.0.2')],
      [true, true, false],
      'the third connection from one source is closed',
    );
    assert.deepEqual([await open('127.0.0.9'), await open('127.0.0.9'), await open('127.0.0.9')], [true, true, true]);
    assert.equal(await open('127.0.0.3'), false, 'total cap of 5 reached');
    // A connection that closes gives its place back.
    sockets[0].destroy();
    // Waiting for the condition, not a fixed time: a connection from 127.0.0.3 is admitted again (each try that is
    // refused closes at once; one that is never admitted fails after the bound).
    assert.equal(await eventually(() => open('127.0.0.3'), 'a connection admitted after one closed', 5000, 0), true);
  });

  it('WS: a refused source is closed before the upgrade; a silent connection is closed at the deadline', async () => {
    const ua = await agent({ admitSource: (a) => a !== '127.0.0.2', connectionLimits: { firstMessageMs: 300 } }, true);
    const port = ua.address('WS')!.port;
    const refused = new WebSocket(`ws://127.0.0.1:${port}`, 'sip', { localAddress: '127.0.0.2' });
    sockets.push({ destroy: () => refused.terminate() });
    const outcome = await new Promise<string>((r) => {
      refused.once('open', () => r('open'));
      refused.once('error', () => r('refused'));
    });
    assert.equal(outcome, 'refused');

    const silent = new WebSocket(`ws://127.0.0.1:${port}`, 'sip', { localAddress: '127.0.0.3' });
    sockets.push({ destroy: () => silent.terminate() });
    await new Promise((r, j) => silent.once('open', r).once('error', j));
    const start = Date.now();
    await new Promise((r) => silent.once('close', r));
    const ms = Date.now() - start;
    assert.ok(ms < 2000, `closed after ${ms} ms`);

    const talker = new WebSocket(`ws://127.0.0.1:${port}`, 'sip', { localAddress: '127.0.0.3' });
    sockets.push({ destroy: () => talker.terminate() });
    await new Promise((r, j) => talker.once('open', r).once('error', j));
    const reply = new Promise<string>((r) => talker.once('message', (d) => r(String(d))));
    talker.send(OPTIONS('WS'));
    assert.match(await reply, /^SIP\/2.0 200 /);
    const closed = new Promise((r) => talker.once('close', r));
    assert.equal(await settlesWithin(closed, 600), false, 'a connection that sent a message stays open');
  });
});
