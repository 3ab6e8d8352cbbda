/**
 * In-dialog requests over UDP and an untrusted peer (pinUdpDialogs): the switch sends BYE, re-INVITE and ACK to
 * the address the dialog was learned from, never to a host the phone names in its Contact (or Record-Route).
 * A trusted peer (a carrier) still has its Contact followed (RFC 3261 §12.2.1.1).
 */
import { strict as assert } from 'node:assert';
import dgram from 'node:dgram';
import { type Dialog } from '../../../sip/stack/index.js';
import { Agents, SDP_A, SDP_B, waitFor } from './helpers.js';

describe('dialogs over UDP pinned to the peer they were learned from', function () {
  this.timeout(15000);
  const agents = new Agents();
  let victim: dgram.Socket;
  let hits: string[];
  let victimPort: number;
  beforeEach(async () => {
    hits = [];
    victim = dgram.createSocket('udp4');
    victim.on('message', (m) => hits.push(m.toString().split('\r\n')[0]));
    await new Promise<void>((r) => victim.bind(0, '127.0.0.1', () => r()));
    victimPort = victim.address().port;
  });
  afterEach(async () => {
    victim.close();
    await agents.closeAll();
  });
  const elsewhere = () => `<sip:victim@127.0.0.1:${victimPort}>`;
  const settle = () => new Promise((r) => setTimeout(r, 300));

  for (const pinned of [true, false]) {
    it(`UAS dialog (phone calls the switch), a Contact naming another host: ${pinned ? 'BYE goes to the phone' : 'a trusted peer has its Contact followed'}`, async () => {
      const sw = await agents.make({ pinUdpDialogs: () => pinned }, { udp: true, tcp: false });
      const phone = await agents.make({}, { udp: true, tcp: false });
      const uas = waitFor<Dialog>((done) =>
        sw.onRequest('INVITE', async (req) => done(await sw.createUAS(req, { localSdp: SDP_B }))),
      );
      const swPort = sw.address('UDP')!.port;
      const headers = { Contact: elsewhere() };
      const uac = await phone.createUAC(`sip:bob@127.0.0.1:${swPort}`, { localSdp: SDP_A, headers });
      const dialog = await uas;
      const byeSeen = waitFor<boolean>((done) => uac.on('bye', () => done(true)), 2000).catch(() => false);
      void dialog.bye(); // unanswered when it goes astray: not awaited
      if (pinned) {
        assert.equal(await byeSeen, true, 'the phone got the BYE');
        await settle();
        assert.deepEqual(hits, [], 'nothing was sent to the host the phone named');
      } else {
        await settle();
        assert.ok(
          hits.some((h) => h.startsWith('BYE ')),
          `BYE followed the Contact: ${hits.join(' | ')}`,
        );
      }
    });
  }

  it('UAC dialog (the switch calls the phone): a 2xx Contact and a re-INVITE Contact elsewhere are not followed', async () => {
    const sw = await agents.make({ pinUdpDialogs: () => true }, { udp: true, tcp: false });
    const phone = await agents.make({}, { udp: true, tcp: false });
    const phoneSide = waitFor<Dialog>((done) =>
      phone.onRequest('INVITE', async (req) =>
        done(await phone.createUAS(req, { localSdp: SDP_B, headers: { Contact: elsewhere() } })),
      ),
    );
    const phonePort = phone.address('UDP')!.port;
    const dialog = await sw.createUAC(`sip:alice@127.0.0.1:${phonePort}`, { localSdp: SDP_A });
    const theirs = await phoneSide;
    // A re-INVITE from the phone names yet another target (§12.2.2 target refresh).
    await theirs.request('INVITE', { body: SDP_B, headers: { Contact: elsewhere() } });
    assert.equal(dialog.remoteTarget.scheme, 'sip');
    // The refreshed target is still what the Request-URI says; only the destination is pinned.
    assert.match(JSON.stringify(dialog.remoteTarget), new RegExp(String(victimPort)));
    const byeSeen = waitFor<boolean>((done) => theirs.on('bye', () => done(true)), 2000).catch(() => false);
    await dialog.bye();
    assert.equal(await byeSeen, true, 'the phone got the BYE');
    await settle();
    assert.deepEqual(hits, [], 'neither the ACK nor the BYE went to the host the phone named');
  });
});
