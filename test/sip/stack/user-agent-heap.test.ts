import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import dgram from 'node:dgram';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Agents, SDP_A, SDP_B, uriOf } from './helpers.js';

// V8's collector, asked for one kind of collection at a time: a scavenge (minor) or a mark-compact (major).
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as (o: { type: 'minor' | 'major'; execution: 'sync' }) => void;

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));

describe('user agent: what a request leaves in the heap', function () {
  this.timeout(30000);
  const agents = new Agents();
  afterEach(() => agents.closeAll());

  it('a request answered and done is collected by scavenges, not promoted to the old generation', async () => {
    // Measured in a process of its own (heap-probe.ts): other tests' work still in flight in this one is promoted
    // during the measurement too, and the figure depended on which tests ran before.
    const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(here, 'heap-probe.ts')], {
      timeout: 60000,
    });
    const { perRequest } = JSON.parse(stdout.trim().split('\n').pop()!) as { perRequest: number };
    // What stays by design: each answer until Timer J (completed-responses.ts: its bytes, key and channel), about
    // 1.3 KB here. A request kept alive through its scavenges brings its parsed message, transaction and Responder
    // along: 9 KB a request when the agent kept its Responders in a WeakMap.
    assert.ok(perRequest < 3000, `old generation grew by ${perRequest.toFixed(0)} bytes per request`);
  });

  it('a call placed, answered and hung up keeps only keys and bytes while its transactions wait out their timers', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(here, 'heap-probe.ts'), 'calls'], {
      timeout: 60000,
    });
    const { perCall } = JSON.parse(stdout.trim().split('\n').pop()!) as { perCall: number };
    // Both agents' sides of a call: the INVITE server and client transactions in Accepted (Timers L and M, 32 s)
    // and the BYE's client transaction (Timer K) are kept as keys, the ACK and the BYE's answer as bytes: 2.5-3 KB.
    // Held as transactions with their parsed messages, responders and flows: 30 KB a call, 190 MB at 200 calls/s.
    assert.ok(perCall < 8000, `old generation grew by ${perCall.toFixed(0)} bytes per call`);
  });

  it("an INVITE answered 2xx: what its handler's CANCEL listener holds is not kept while the transaction lingers", async () => {
    const ua = await agents.make({}, { udp: true, tcp: false });
    let held: WeakRef<object> | undefined;
    class CallState {
      readonly legs = new Array(1000).fill('leg');
    }
    ua.onRequest('INVITE', (_req, srv) => {
      const call = new CallState(); // stands for a call's whole state
      srv.signal.addEventListener('abort', () => call.legs.length);
      held = new WeakRef(call);
      srv.send(200, 'OK', { body: 'v=0\r\n' });
    });
    const port = ua.address('UDP')!.port;
    const sock = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => sock.bind(0, '127.0.0.1', resolve));
    const local = sock.address().port;
    const answered = new Promise<string>((resolve) => sock.once('message', (m) => resolve(m.toString())));
    sock.send(
      Buffer.from(
        `INVITE sip:1000@127.0.0.1:${port} SIP/2.0\r\n` +
          `Via: SIP/2.0/UDP 127.0.0.1:${local};branch=z9hG4bK-heap-invite;rport\r\n` +
          `From: <sip:2000@127.0.0.1>;tag=a1\r\nTo: <sip:1000@127.0.0.1>\r\nCall-ID: heap-invite@127.0.0.1\r\n` +
          `CSeq: 1 INVITE\r\nContact: <sip:2000@127.0.0.1:${local}>\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n`,
      ),
      port,
      '127.0.0.1',
    );
    assert.match(await answered, /^SIP\/2\.0 200/);
    sock.close();
    // A WeakRef keeps its target through the job that made it; collect twice, a turn apart.
    for (let i = 0; i < 2; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      (gc as unknown as () => void)();
    }
    // The server transaction lingers 32 s after its 2xx (Timer L, RFC 6026); a CANCEL can no longer abort the
    // request, so nothing needs the listener: at 200 calls/s every call's state stayed 32 s (300 MB of heap).
    assert.equal(held?.deref(), undefined, "the handler's state is still reachable from the transaction");
  });

  it("a call placed and answered: what the caller's callbacks hold is not kept while its INVITE transaction lingers", async () => {
    const [a, b] = [await agents.make(), await agents.make()];
    a.onRequest('INVITE', async (req, srv) => {
      srv.send(180);
      const d = await a.createUAS(req, { localSdp: SDP_B });
      setTimeout(() => void d.bye(), 10);
    });
    class CallState {
      readonly legs = new Array(1000).fill('leg');
    }
    let held: WeakRef<object> | undefined;
    const place = async () => {
      const call = new CallState(); // stands for a call's whole state
      held = new WeakRef(call);
      const uac = await b.createUAC(uriOf(a), { localSdp: SDP_A, onProvisional: () => call.legs.length });
      await new Promise((resolve) => uac.once('destroy', resolve)); // the callee hung up
    };
    await place();
    // The INVITE client transaction lingers 32 s after the 2xx (Timer M, RFC 6026) to ACK its retransmissions; it
    // needs the ACK, not the caller's callbacks (at 200 calls/s they kept every call's state that long).
    for (let i = 0; i < 2; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      (gc as unknown as () => void)();
    }
    assert.equal(held?.deref(), undefined, "the caller's state is still reachable from the transaction");
  });
});
