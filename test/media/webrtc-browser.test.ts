import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { launchChromium, type LaunchedChromium } from '../support/chromium.js';
import { MediaEngines, MediaService, rtpmaps, type RtpengineSupervisor } from '../../media/index.js';
import { newSupervisor, quietLogger, tempDir, waitFor } from './helpers.js';
import { RtpPeer, tone, toneEnergy } from './rtp-peer.js';

/**
 * A real browser leg: Chromium's RTCPeerConnection (ICE, DTLS-SRTP, Opus) through rtpengine to a plain PCMU
 * peer, with transcoding in rtpengine. The browser sends a 440 Hz oscillator; the plain peer sends 1000 Hz.
 */
const PAGE = `<!doctype html><script>
window.startCall = async () => {
  const ctx = new AudioContext();
  const osc = ctx.createOscillator();
  osc.frequency.value = 440;
  const dest = ctx.createMediaStreamDestination();
  osc.connect(dest);
  osc.start();
  const pc = new RTCPeerConnection({ iceServers: [] });
  window.pc = pc;
  pc.addTrack(dest.stream.getAudioTracks()[0], dest.stream);
  pc.ontrack = (e) => { const a = new Audio(); a.srcObject = e.streams[0] || new MediaStream([e.track]); a.play(); };
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((r) => { if (pc.iceGatheringState === 'complete') r(); pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && r(); setTimeout(r, 3000); });
  return pc.localDescription.sdp;
};
window.finishCall = async (sdp) => { await window.pc.setRemoteDescription({ type: 'answer', sdp }); };
window.inbound = async () => {
  const stats = await window.pc.getStats();
  let out = { packetsReceived: 0, totalAudioEnergy: 0, codec: '', state: window.pc.connectionState };
  stats.forEach((s) => {
    if (s.type === 'inbound-rtp' && s.kind === 'audio') { out.packetsReceived = s.packetsReceived; out.totalAudioEnergy = s.totalAudioEnergy || 0;
      const c = stats.get(s.codecId); out.codec = c ? c.mimeType : ''; }
  });
  return out;
};
</script>`;

describe('media: a real Chromium WebRTC leg bridged to a plain PCMU leg', function () {
  this.timeout(60_000);
  let supervisor: RtpengineSupervisor;
  let media: MediaService;
  let data: ReturnType<typeof tempDir>;
  let server: Server;
  let chrome: LaunchedChromium;
  let page: Page;
  let plain: RtpPeer;

  before(async () => {
    data = tempDir('chromium');
    supervisor = await newSupervisor(data.dir);
    await supervisor.start();
    media = new MediaService({
      engines: new MediaEngines({ urls: [], local: supervisor }),
      dataDir: data.dir,
      logger: quietLogger,
    });
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(PAGE);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    chrome = await launchChromium([
      '--allow-loopback-in-peer-connection',
      '--disable-features=WebRtcHideLocalIpsWithMdns',
    ]);
    page = await chrome.browser.newPage();
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    plain = await RtpPeer.open();
  });

  after(async () => {
    plain?.close();
    await chrome?.close();
    server?.closeAllConnections();
    server?.close();
    await media?.close();
    await supervisor?.stop();
    data?.remove();
  });

  it('carries audio both ways: browser Opus over DTLS-SRTP <-> PCMU, transcoded by rtpengine', async () => {
    const id = 'chromium-1';
    const offer = await page.evaluate(() => (window as unknown as { startCall: () => Promise<string> }).startCall());
    assert.match(offer, /UDP\/TLS\/RTP\/SAVPF/);
    const toPlain = await media.offer(id, 'browser', offer, {
      toSide: { profile: 'rtp', codecs: ['PCMU', 'telephone-event'], only: true },
      offererCodecs: ['opus'],
    });
    assert.deepEqual(
      [...rtpmaps(toPlain).values()].filter((c) => c === 'OPUS'),
      [],
    );
    plain.useSdp(toPlain);
    const toBrowser = await media.answer(id, 'browser', 'pstn', plain.sdp(['PCMU']), {
      fromSide: { profile: 'webrtc' },
    });
    await page.evaluate(
      (sdp) => (window as unknown as { finishCall: (s: string) => Promise<void> }).finishCall(sdp),
      toBrowser,
    );
    await plain.sendAudio(tone(1000, 2), 0);
    await waitFor(() => plain.received.length > 50, 5000, 'PCMU from the browser');
    const heard = plain.decoded().subarray(-8000);
    assert.ok(plain.received.every((p) => p.payloadType === 0 || p.payloadType === 101));
    assert.ok(toneEnergy(heard, 440) > 10 * toneEnergy(heard, 1000), 'the plain peer hears the 440 Hz oscillator');
    const inbound = await page.evaluate(() =>
      (
        window as unknown as {
          inbound: () => Promise<{ packetsReceived: number; totalAudioEnergy: number; codec: string; state: string }>;
        }
      ).inbound(),
    );
    assert.equal(inbound.state, 'connected');
    assert.equal(inbound.codec, 'audio/opus');
    assert.ok(inbound.packetsReceived > 50, `browser received ${inbound.packetsReceived} packets`);
    assert.ok(inbound.totalAudioEnergy > 0, 'the browser decoded audio with energy');
    await media.deleteSession(id);
  });
});
