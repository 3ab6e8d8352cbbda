/**
 * Run by user-agent-heap.test.ts in a process of its own (`node --import tsx heap-probe.ts [calls]`): how many bytes
 * of the old generation each REGISTER answered and done leaves behind, or with `calls` each call placed, answered and
 * hung up between two agents. Alone, because what other tests in the same process
 * still have in flight (timers, lingering transactions, sockets) is promoted during the measurement as well: run
 * right after the ng-client and UDP front tests the figure was 8.7 KB a request against 3 KB alone. Prints one line
 * of JSON: { perRequest }.
 */
import dgram from 'node:dgram';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Agents, SDP_A, SDP_B, uriOf } from './helpers.js';

// V8's collector, asked for one kind of collection at a time: a scavenge (minor) or a mark-compact (major).
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as (o: { type: 'minor' | 'major'; execution: 'sync' }) => void;

/** Bytes in the old generation (old space and large objects): what scavenges promote and only mark-compacts free. */
function oldGeneration(): number {
  return v8
    .getHeapSpaceStatistics()
    .filter((s) => s.space_name === 'old_space' || s.space_name === 'large_object_space')
    .reduce((n, s) => n + s.space_used_size, 0);
}

async function measure(): Promise<number> {
  const agents = new Agents();
  const ua = await agents.make({}, { udp: true, tcp: false });
  ua.onRequest('REGISTER', async (_req, srv) => {
    await Promise.resolve(); // answered after an await, as the registrar does
    srv.send(200);
  });
  const port = ua.address('UDP')!.port;
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => sock.bind(0, '127.0.0.1', resolve));
  const local = sock.address().port;
  let answered = 0;
  let wake: (() => void) | undefined;
  sock.on('message', () => {
    answered += 1;
    wake?.();
  });
  const register = (i: number) =>
    Buffer.from(
      `REGISTER sip:127.0.0.1:${port} SIP/2.0\r\n` +
        `Via: SIP/2.0/UDP 127.0.0.1:${local};branch=z9hG4bK-heap-${i};rport\r\n` +
        `From: <sip:${1000 + (i % 100)}@127.0.0.1>;tag=t${i}\r\nTo: <sip:${1000 + (i % 100)}@127.0.0.1>\r\n` +
        `Call-ID: heap-${i}@127.0.0.1\r\nCSeq: 1 REGISTER\r\nContact: <sip:${1000 + (i % 100)}@127.0.0.1:${local}>\r\n` +
        `Max-Forwards: 70\r\nExpires: 3600\r\nContent-Length: 0\r\n\r\n`,
    );
  const send = async (from: number, count: number) => {
    const target = answered + count;
    for (let i = from; i < from + count; i++) sock.send(register(i), port, '127.0.0.1');
    while (answered < target) await new Promise<void>((resolve) => ((wake = resolve), setTimeout(resolve, 50)));
  };
  await send(0, 200); // warm up: code, maps, the transaction layer's tables
  gc({ type: 'major', execution: 'sync' });
  const before = oldGeneration();
  const N = 2000;
  for (let i = 0; i < N; i += 100) {
    await send(1000 + i, 100);
    // A request still held after a scavenge is copied; held after a second one, it is promoted.
    gc({ type: 'minor', execution: 'sync' });
    gc({ type: 'minor', execution: 'sync' });
  }
  const perRequest = (oldGeneration() - before) / N;
  sock.close();
  await agents.closeAll();
  return perRequest;
}

/**
 * Calls between two agents over UDP, each ended by the callee's BYE: what stays while their transactions wait out
 * Timers L, M and K (all still running when measured) and the BYE's answer Timer J.
 */
async function measureCalls(): Promise<number> {
  const agents = new Agents();
  const [a, b] = [await agents.make({}, { udp: true, tcp: false }), await agents.make({}, { udp: true, tcp: false })];
  a.onRequest('INVITE', async (req) => {
    const dialog = await a.createUAS(req, { localSdp: SDP_B });
    setTimeout(() => void dialog.bye(), 1);
  });
  const place = async () => {
    const uac = await b.createUAC(uriOf(a), { localSdp: SDP_A });
    await new Promise((resolve) => uac.once('destroy', resolve));
  };
  const batch = (n: number) => Promise.all(Array.from({ length: n }, place));
  for (let i = 0; i < 4; i++) await batch(50); // warm up
  gc({ type: 'major', execution: 'sync' });
  const before = oldGeneration();
  const N = 2000;
  for (let i = 0; i < N; i += 50) {
    await batch(50);
    gc({ type: 'minor', execution: 'sync' });
    gc({ type: 'minor', execution: 'sync' });
  }
  const perCall = (oldGeneration() - before) / N;
  await agents.closeAll();
  return perCall;
}

const calls = process.argv[2] === 'calls';
(calls ? measureCalls() : measure()).then(
  (bytes) => {
    process.stdout.write(`${JSON.stringify(calls ? { perCall: bytes } : { perRequest: bytes })}\n`);
    process.exit(0);
  },
  (err: unknown) => {
    process.stderr.write(`${String((err as Error)?.stack ?? err)}\n`);
    process.exit(1);
  },
);
