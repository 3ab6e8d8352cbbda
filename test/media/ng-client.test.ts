import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { MediaError, NgClient } from '../../media/index.js';

/**
 * A peer in its own process that answers every ng request at once, as rtpengine does, with an answer the size of an
 * offer's (SDP and all, ~1.5 KB), except 'slow', answered after 150 ms, and 'lossy', answered only when resent. It prints its port when ready.
 */
const PEER = `
const dgram = require('node:dgram');
const s = dgram.createSocket('udp4');
const pad = 'v'.repeat(1400);
let held = 0;
const seen = new Set();
s.on('message', (m, r) => {
  const cookie = m.toString('latin1', 0, m.indexOf(32));
  // 'lossy' is lost the first time each cookie arrives, as on a lossy path; the resend is answered.
  if (m.includes('7:command5:lossy') && !seen.has(cookie)) {
    seen.add(cookie);
    return;
  }
  if (!m.includes('7:command4:slow')) {
    s.send(Buffer.from(cookie + ' d6:result2:ok3:sdp' + pad.length + ':' + pad + 'e'), r.port, r.address);
    return;
  }
  // 'slow' is answered after 150 ms, with how many slow requests the peer held at once when it came.
  const peak = String(++held);
  setTimeout(() => {
    held--;
    s.send(Buffer.from(cookie + ' d6:result2:ok4:peak' + peak.length + ':' + peak + 'e'), r.port, r.address);
  }, 150);
});
s.bind(0, '127.0.0.1', () => { s.setRecvBufferSize(4 << 20); console.log(s.address().port); });
`;

describe('media: ng client', function () {
  this.timeout(20_000);
  let peer: ChildProcess;
  let port: number;

  before(async () => {
    peer = spawn(process.execPath, ['-e', PEER], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [line] = (await once(peer.stdout!, 'data')) as [Buffer];
    port = Number(line.toString().trim());
  });

  after(() => peer.kill());

  it('answers arriving while the event loop is busy wait in its socket: a burst of 1,000 loses none', async () => {
    // No resend within the test: an answer the kernel dropped leaves its request to time out. All 1,000 in flight.
    const client = new NgClient({ host: '127.0.0.1', port, timeoutMs: 8000, retransmitMs: 60_000, maxInFlight: 1000 });
    try {
      await client.request('ping');
      const burst = Array.from({ length: 1000 }, () => client.request('offer'));
      await new Promise((resolve) => process.nextTick(resolve)); // after the sends (each waits a tick to go)
      const until = performance.now() + 400; // the loop busy while the peer answers them all (~1.5 MB)
      while (performance.now() < until);
      const answers = await Promise.allSettled(burst);
      const lost = answers.filter((a) => a.status === 'rejected').length;
      assert.equal(lost, 0, `${lost} of 1,000 answers were dropped before the client read them`);
    } finally {
      client.close();
    }
  });

  it('sends at most maxInFlight requests at once; the rest wait their turn, and the wait is sampled', async () => {
    const client = new NgClient({ host: '127.0.0.1', port, timeoutMs: 5000, maxInFlight: 4 });
    try {
      const answers = await Promise.all(Array.from({ length: 12 }, () => client.request('slow')));
      const peaks = answers.map((a) => Number(a.peak));
      assert.equal(Math.max(...peaks), 4, `the peer held ${Math.max(...peaks)} at once`);
      // The last four waited for two rounds of 150 ms.
      const wait = client.sampleSendWait();
      assert.ok(wait >= 250 && wait < 2000, `longest wait for a slot ${wait.toFixed(0)} ms`);
      assert.equal(client.sampleSendWait(), 0, 'a sample resets it');
    } finally {
      client.close();
    }
  });

  it('resends an unanswered request every retransmitMs and times out at its own deadline', async () => {
    const client = new NgClient({ host: '127.0.0.1', port, timeoutMs: 5000, retransmitMs: 100 });
    try {
      const t0 = performance.now();
      const answers = await Promise.all(Array.from({ length: 20 }, () => client.request('lossy')));
      const took = performance.now() - t0;
      assert.ok(
        answers.every((a) => a.result === 'ok'),
        'every resend answered',
      );
      assert.ok(took >= 95 && took < 2000, `answered after one resend interval, not ${took} ms`);
      const short = client.request('lossy', {}, 60);
      await assert.rejects(short, (e: unknown) => e instanceof MediaError && /in 60 ms/.test(e.message));
      assert.equal(client.pendingCount, 0);
    } finally {
      client.close();
    }
  });

  it('a request that times out while waiting its turn is rejected and never sent; close rejects the rest', async () => {
    const client = new NgClient({ host: '127.0.0.1', port, timeoutMs: 5000, maxInFlight: 1 });
    try {
      const first = client.request('slow');
      const late = client.request('slow', {}, 50);
      await assert.rejects(late, (e: unknown) => e instanceof MediaError && e.code === 'MEDIA_TIMEOUT');
      assert.equal((await first).peak, '1');
      // The slot is free again, and the one that timed out was never sent (the peer held one at a time).
      assert.equal((await client.request('slow')).peak, '1');
      const held = client.request('slow');
      const queued = client.request('slow');
      client.close();
      for (const p of [held, queued])
        await assert.rejects(p, (e: unknown) => e instanceof MediaError && e.code === 'MEDIA_ENGINE_GONE');
    } finally {
      client.close();
    }
  });
});
