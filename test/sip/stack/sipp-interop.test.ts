/**
 * Interop with SIPp (a real, independent SIP implementation) over UDP and TCP: OPTIONS, REGISTER with digest,
 * calls with the stack as UAS and as UAC, retransmissions under deterministic loss (a relay that loses chosen
 * datagrams), CANCEL before answer,
 * BYE from either side.
 */
import { strict as assert } from 'node:assert';
import { DigestServer, UserAgent, type Dialog } from '../../../sip/stack/index.js';
import { LossyUdpRelay, loseListed } from './lossy-udp-relay.js';
import { nextPort } from '../../support/ports.js';
import { clientArgs, mediaPort, peerPort, SCENARIOS, SippPeers, waitForBound } from './sipp.js';
import { SDP_B, waitFor } from './helpers.js';

describe('SIPp interop', function () {
  this.timeout(60000);
  const sipp = new SippPeers();
  let ua: UserAgent;
  let stackPort = 0;
  let md5: DigestServer;
  const hangups: Dialog[] = [];

  before(async () => {
    ua = new UserAgent();
    // UDP and TCP on one port number of this run's block, so concurrent runs of the suite do not collide.
    for (let attempt = 0; ; attempt++) {
      stackPort = nextPort();
      try {
        await ua.listen({ udp: { host: '127.0.0.1', port: stackPort }, tcp: { host: '127.0.0.1', port: stackPort } });
        break;
      } catch (err) {
        await ua.close();
        ua = new UserAgent();
        if (attempt > 5) throw err;
      }
    }
    // SIPp 3.6.1 answers only MD5 and only reads the first challenge, so this registrar lists MD5 alone;
    // SHA-256 is proven against our own client helper in user-agent.test.ts.
    md5 = new DigestServer({ realm: 'simu.test', algorithms: ['MD5'] });
    ua.onRequest('REGISTER', async (req, srv) => {
      const v = await md5.verify(req, (u) => (u === 'alice' ? 'secret' : undefined));
      if (!v.ok) return srv.send(401, undefined, { headers: md5.challenge({ stale: v.stale }) });
      srv.send(200, 'OK', { headers: { Contact: req.headers.get('contact') ?? '' } });
    });
    ua.onRequest('INVITE', async (req, srv) => {
      const user = 'user' in req.uri ? req.uri.user : undefined;
      srv.send(180);
      if (user === 'cancel') return; // wait: the caller cancels (§9.2 answers 487)
      const dialog = await ua.createUAS(req, { localSdp: SDP_B });
      if (user === 'hangup') {
        hangups.push(dialog);
        setTimeout(() => void dialog.bye(), 100);
      }
    });
  });

  after(async () => {
    sipp.killAll();
    await ua.close();
  });

  const target = () => `127.0.0.1:${stackPort}`;

  /** SIPp's built-in uas as the callee, on fresh ports of our range. */
  async function startUas(transport: 'UDP' | 'TCP', calls: number, opts: { port?: number; scenario?: string[] } = {}) {
    const port = opts.port ?? peerPort();
    const args = [...(opts.scenario ?? ['-sn', 'uas']), '-i', '127.0.0.1', '-p', String(port)];
    args.push('-mp', String(mediaPort()), '-m', String(calls), '-timeout', '45s');
    if (transport === 'TCP') args.push('-t', 't1');
    return { port, peer: sipp.run(args, 50000) };
  }

  for (const transport of ['UDP', 'TCP'] as const) {
    it(`${transport}: OPTIONS is answered 200`, async () => {
      const r = await sipp.run([...clientArgs(target(), transport), '-sf', `${SCENARIOS}/options.xml`]).done;
      assert.equal(r.code, 0, r.stderr);
    });

    it(`${transport}: REGISTER is challenged and SIPp's MD5 digest accepted`, async () => {
      const r = await sipp.run([...clientArgs(target(), transport), '-sf', `${SCENARIOS}/register-digest.xml`]).done;
      assert.equal(r.code, 0, r.stderr);
    });

    it(`${transport}: stack as UAS: SIPp's built-in uac calls, gets 180/200, ACKs, hangs up with BYE (3 calls)`, async () => {
      const r = await sipp.run([...clientArgs(target(), transport, 3), '-sn', 'uac', '-r', '10']).done;
      assert.equal(r.code, 0, r.stderr);
    });

    it(`${transport}: stack as UAS: CANCEL before answer gets 200 and the INVITE 487`, async () => {
      const r = await sipp.run([
        ...clientArgs(target(), transport),
        '-sf',
        `${SCENARIOS}/uac-cancel.xml`,
        '-s',
        'cancel',
      ]).done;
      assert.equal(r.code, 0, r.stderr);
    });

    it(`${transport}: stack as UAS hangs up: the BYE from our side is answered by SIPp`, async () => {
      const before = hangups.length;
      const r = await sipp.run([
        ...clientArgs(target(), transport),
        '-sf',
        `${SCENARIOS}/uac-remote-bye.xml`,
        '-s',
        'hangup',
      ]).done;
      assert.equal(r.code, 0, r.stderr);
      assert.equal(hangups.length, before + 1);
    });

    it(`${transport}: stack as UAC: calls SIPp's built-in uas, gets the answer, hangs up`, async () => {
      const { port: uasPort, peer } = await startUas(transport, 1);
      await waitForBound(uasPort, transport);
      const ringing: number[] = [];
      const suffix = transport === 'TCP' ? ';transport=tcp' : '';
      const dialog = await ua.createUAC(`sip:service@127.0.0.1:${uasPort}${suffix}`, {
        localSdp: SDP_B,
        onProvisional: (res) => ringing.push(res.status),
      });
      assert.deepEqual(ringing, [180]);
      assert.match(dialog.remoteSdp ?? '', /^v=0/);
      await dialog.bye();
      const r = await peer.done;
      assert.equal(r.code, 0, r.stderr);
    });
  }

  /** Every lost datagram `KIND#n` was followed by its retransmission `KIND#n+1`: the loss was repaired. */
  function assertRepaired(relay: LossyUdpRelay) {
    for (const lost of relay.lost) {
      const [, head, n] = /^(.*)#(\d+)$/.exec(lost)!;
      assert.ok(relay.seen.includes(`${head}#${Number(n) + 1}`), `${lost} was never retransmitted: ${relay.seen}`);
    }
  }

  it('UDP: stack as UAS repairs chosen losses through a relay: lost INVITE, 2xx, ACK, BYE, 200 to BYE (6 calls)', async () => {
    // Deterministic loss (SIPp's random -lost was flaky when it also lost a retransmission). Calls 0-4 each lose
    // the first copy of one message; call 5 loses all of them, and the INVITE's first retransmission too.
    const losses = {
      0: ['INVITE'],
      1: ['200 INVITE'],
      2: ['ACK'],
      3: ['BYE'],
      4: ['200 BYE'],
      5: ['INVITE', 'INVITE#2', '200 INVITE', 'ACK', 'BYE', '200 BYE'],
    };
    const relay = await LossyUdpRelay.start({ host: '127.0.0.1', port: stackPort }, loseListed(losses));
    try {
      const args = clientArgs(`127.0.0.1:${relay.port}`, 'UDP', 6);
      const r = await sipp.run([...args, '-sf', `${SCENARIOS}/uac-txn.xml`, '-r', '5'], 55000).done;
      assert.equal(r.code, 0, r.stderr);
      const expected = Object.entries(losses).flatMap(([call, kinds]) =>
        kinds.map((k) => `call ${call}: ${k.includes('#') ? k : `${k}#1`}`),
      );
      assert.deepEqual([...relay.lost].sort(), expected.sort());
      assertRepaired(relay);
    } finally {
      relay.close();
    }
  });

  it('UDP: stack as UAC repairs chosen losses through a relay: Timer A, 2xx re-ACKed, Timer E (6 calls)', async () => {
    const losses = {
      0: ['INVITE'],
      1: ['200 INVITE'],
      2: ['ACK'],
      3: ['BYE'],
      4: ['200 BYE'],
      5: ['INVITE', 'INVITE#2', '200 INVITE', 'ACK', 'BYE', 'BYE#2', '200 BYE'],
    };
    const uasPort = peerPort();
    const relay = await LossyUdpRelay.start({ host: '127.0.0.1', port: uasPort }, loseListed(losses));
    try {
      // SIPp's Contact names the relay's port, so our ACK and BYE pass through the relay too.
      const { peer } = await startUas('UDP', 6, {
        port: uasPort,
        scenario: ['-sf', `${SCENARIOS}/uas-relayed.xml`, '-key', 'relay_port', String(relay.port)],
      });
      await waitForBound(uasPort, 'UDP');
      for (let call = 0; call < 6; call++) {
        const dialog = await ua.createUAC(`sip:service@127.0.0.1:${relay.port}`, { localSdp: SDP_B });
        assert.equal(dialog.state, 'confirmed');
        assert.match(dialog.remoteSdp ?? '', /^v=0/);
        // A lost ACK is repaired only while SIPp still waits for it: hang up once it has come (§13.2.2.4).
        if (call === 2 || call === 5) await relay.until(`call ${call}: ACK#2`);
        await dialog.bye();
        await relay.until(`call ${call}: 200 BYE#${call === 4 || call === 5 ? 2 : 1}`);
      }
      const r = await peer.done;
      assert.equal(r.code, 0, r.stderr);
      const expected = Object.entries(losses).flatMap(([call, kinds]) =>
        kinds.map((k) => `call ${call}: ${k.includes('#') ? k : `${k}#1`}`),
      );
      assert.deepEqual([...relay.lost].sort(), expected.sort());
      assertRepaired(relay);
    } finally {
      relay.close();
    }
  });

  it('the dialogs of all these calls are gone afterwards', async () => {
    await waitFor<void>((done) => {
      const check = () => (ua.dialogCount === 0 ? done() : setTimeout(check, 50));
      check();
    }, 10000).catch(() => assert.fail(`dialogs left: ${JSON.stringify({ ...ua.stats(), live: ua.dialogs() })}`));
  });
});
