import assert from 'node:assert/strict';
import { MediaEngines, MediaService, rtpmaps, sdpAttribute, type RtpengineSupervisor } from '../../media/index.js';
import { newSupervisor, quietLogger, tempDir } from './helpers.js';
import { RtpPeer } from './rtp-peer.js';
import { nextPorts } from '../support/ports.js';

/** What a browser's RTCPeerConnection offers for one audio track (Chrome's shape, Opus only). */
function browserOffer(port: number): string {
  const fingerprint = Array.from({ length: 32 }, (_, i) => ((i * 37) & 0xff).toString(16).padStart(2, '0'))
    .join(':')
    .toUpperCase();
  return [
    'v=0',
    'o=- 4611731400430051336 2 IN IP4 127.0.0.1',
    's=-',
    't=0 0',
    'a=group:BUNDLE 0',
    'a=msid-semantic: WMS',
    `m=audio ${port} UDP/TLS/RTP/SAVPF 111 126`,
    'c=IN IP4 127.0.0.1',
    'a=rtcp:9 IN IP4 0.0.0.0',
    `a=candidate:1 1 udp 2122260223 127.0.0.1 ${port} typ host generation 0`,
    'a=ice-ufrag:Brws',
    'a=ice-pwd:browserpasswordbrowserpw',
    'a=ice-options:trickle',
    `a=fingerprint:sha-256 ${fingerprint}`,
    'a=setup:actpass',
    'a=mid:0',
    'a=sendrecv',
    'a=rtcp-mux',
    'a=rtpmap:111 opus/48000/2',
    'a=fmtp:111 minptime=10;useinbandfec=1',
    'a=rtpmap:126 telephone-event/8000',
    '',
  ].join('\r\n');
}

function mLine(sdp: string): string {
  return /^m=audio .*$/m.exec(sdp)?.[0] ?? '';
}

describe('media: WebRTC leg bridged to a plain RTP leg (ng level, real rtpengine)', function () {
  this.timeout(30_000);
  let supervisor: RtpengineSupervisor;
  let media: MediaService;
  let data: ReturnType<typeof tempDir>;
  let plain: RtpPeer;

  before(async () => {
    data = tempDir('webrtc');
    supervisor = await newSupervisor(data.dir);
    await supervisor.start();
    media = new MediaService({
      engines: new MediaEngines({ urls: [], local: supervisor }),
      dataDir: data.dir,
      logger: quietLogger,
    });
    plain = await RtpPeer.open();
  });

  after(async () => {
    plain?.close();
    await media?.close();
    await supervisor?.stop();
    data?.remove();
  });

  it('a browser offer (Opus, DTLS-SRTP, ICE) reaches the PSTN side as plain RTP/AVP with PCMU, and back', async () => {
    const id = 'webrtc-1';
    const toPlain = await media.offer(id, 'browser', browserOffer(nextPorts(2)), {
      toSide: { profile: 'rtp', codecs: ['PCMU', 'PCMA', 'telephone-event'], only: true },
    });
    assert.match(mLine(toPlain), /^m=audio \d+ RTP\/AVP /);
    const plainCodecs = [...rtpmaps(toPlain).entries()].filter(([pt]) =>
      mLine(toPlain).split(' ').includes(String(pt)),
    );
    assert.deepEqual(
      plainCodecs.map(([, name]) => name).filter((n) => n !== 'TELEPHONE-EVENT'),
      ['PCMU', 'PCMA'],
    );
    assert.equal(sdpAttribute(toPlain, 'fingerprint'), undefined, 'no DTLS towards the PSTN side');
    assert.equal(sdpAttribute(toPlain, 'ice-ufrag'), undefined, 'no ICE towards the PSTN side');
    assert.doesNotMatch(toPlain, /opus/i);

    const toBrowser = await media.answer(id, 'browser', 'pstn', plain.sdp(['PCMU', 'telephone-event']), {
      fromSide: { profile: 'webrtc' },
    });
    assert.match(mLine(toBrowser), /^m=audio \d+ UDP\/TLS\/RTP\/SAVPF /);
    assert.match(sdpAttribute(toBrowser, 'fingerprint') ?? '', /^sha-256 ([0-9A-F]{2}:){31}[0-9A-F]{2}$/i);
    assert.ok((sdpAttribute(toBrowser, 'ice-ufrag') ?? '').length >= 4, 'ICE credentials for the browser');
    assert.ok((sdpAttribute(toBrowser, 'ice-pwd') ?? '').length >= 22);
    assert.match(toBrowser, /^a=candidate:/m);
    assert.match(toBrowser, /^a=rtcp-mux\r?$/m);
    assert.match(sdpAttribute(toBrowser, 'setup') ?? '', /^(active|passive)$/);
    assert.match(toBrowser, /^a=rtpmap:111 opus\/48000\/2/m);
    assert.doesNotMatch(toBrowser, /^a=crypto:/m, 'DTLS-SRTP, not SDES');
    await media.deleteSession(id);
  });

  it('a plain PCMU offer reaches a browser callee as DTLS-SRTP with ICE and Opus added by transcoding', async () => {
    const id = 'webrtc-2';
    const toBrowser = await media.offer(id, 'pstn', plain.sdp(['PCMU', 'telephone-event']), {
      toSide: { profile: 'webrtc' },
    });
    assert.match(mLine(toBrowser), /^m=audio \d+ UDP\/TLS\/RTP\/SAVPF /);
    assert.match(toBrowser, /opus\/48000\/2/);
    assert.match(sdpAttribute(toBrowser, 'fingerprint') ?? '', /^sha-256 /);
    assert.equal(sdpAttribute(toBrowser, 'setup'), 'actpass');
    assert.ok(sdpAttribute(toBrowser, 'ice-ufrag'));
    assert.match(toBrowser, /^a=rtcp-mux\r?$/m);

    const opusPt = /^a=rtpmap:(\d+) opus/m.exec(toBrowser)?.[1] ?? '111';
    const answer = browserOffer(nextPorts(2))
      .replace(/^m=audio (\d+) UDP\/TLS\/RTP\/SAVPF 111 126/m, `m=audio $1 UDP/TLS/RTP/SAVPF ${opusPt}`)
      .replace('a=setup:actpass', 'a=setup:active')
      .replace(/a=rtpmap:111/g, `a=rtpmap:${opusPt}`)
      .replace(/a=fmtp:111/g, `a=fmtp:${opusPt}`)
      .replace(/a=rtpmap:126.*\r\n/, '');
    const toPlain = await media.answer(id, 'pstn', 'browser', answer, { fromSide: { profile: 'rtp' } });
    assert.match(mLine(toPlain), /^m=audio \d+ RTP\/AVP 0/);
    assert.equal(sdpAttribute(toPlain, 'fingerprint'), undefined);
    assert.equal(sdpAttribute(toPlain, 'ice-ufrag'), undefined);
    await media.deleteSession(id);
  });
});
