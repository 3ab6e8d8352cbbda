import assert from 'node:assert/strict';
import { buildRtp, type MediaService } from '../../../media/index.js';
import { G722Decoder, G722Encoder } from '../../../media/mixer/g722.js';
import { sine, toneAmplitude } from '../../support/tones.js';
import { startMediaService } from '../helpers.js';
import { RtpPeer, tone } from '../rtp-peer.js';

/** Encodes `samples` (16 kHz) and decodes them again with fresh codecs. */
function roundTrip(samples: Int16Array): Int16Array {
  const codes = new Uint8Array(samples.length / 2);
  new G722Encoder().encode(samples, codes);
  const out = new Int16Array(samples.length);
  new G722Decoder().decode(codes, out);
  return out;
}

describe('media/mixer: G.722 (64 kbit/s SB-ADPCM) in TypeScript', function () {
  this.timeout(60_000);

  it('keeps both sub-bands: tones of 300 Hz to 7 kHz come back at their amplitude, wideband kept', () => {
    for (const f of [300, 1000, 3400, 5000, 7000]) {
      const out = roundTrip(sine(f, 1, 8000, 16000)).subarray(8000);
      const amp = toneAmplitude(out, f, 16000);
      assert.ok(Math.abs(amp - 8000) < 400, `${f} Hz came back at ${amp.toFixed(0)} (sent 8000)`);
      const stray = toneAmplitude(out, f === 1000 ? 2000 : 1000, 16000);
      assert.ok(stray < 100, `${f} Hz: a stray tone at ${stray.toFixed(0)}`);
    }
  });

  it("speaks with rtpengine's own G.722 both ways (a G.722 leg against a PCMU leg, transcoded by the engine)", async () => {
    const svc = await startMediaService('g722');
    const media: MediaService = svc.media;
    const a = await RtpPeer.open();
    const b = await RtpPeer.open();
    try {
      const toB = await media.offer('g722-call', 'A', a.sdp(['G722']), { toSide: { codecs: ['PCMU'], only: true } });
      b.useSdp(toB);
      a.useSdp(await media.answer('g722-call', 'A', 'B', b.sdp(['PCMU'])));
      // A: 1 kHz at 16 kHz through our encoder, 20 ms (320 samples, 160 bytes) a packet; RTP clock 8 kHz for G.722
      // (RFC 3551 4.5.2). B meanwhile sends 600 Hz as PCMU, which the engine encodes to G.722 for A.
      const pcm = sine(1000, 1.5, 8000, 16000);
      const enc = new G722Encoder();
      const sendA = (async () => {
        const start = Date.now();
        for (let k = 0; k * 320 < pcm.length; k += 1) {
          const payload = Buffer.alloc(160);
          enc.encode(pcm.subarray(k * 320, (k + 1) * 320), payload);
          const packet = buildRtp({ payloadType: 9, sequence: k, timestamp: k * 160, ssrc: 0x1234, payload });
          a.socket.send(packet, a.remote!.port, a.remote!.address);
          const wait = start + (k + 1) * 20 - Date.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        }
      })();
      await Promise.all([sendA, b.sendAudio(tone(600, 1.5), 0)]);
      await new Promise((r) => setTimeout(r, 300));

      const atB = b.decoded().subarray(4000);
      assert.ok(atB.length > 4000, `B got ${atB.length} samples`);
      const b1000 = toneAmplitude(atB, 1000);
      assert.ok(b1000 > 3000, `rtpengine decoded our G.722: 1 kHz at B ${b1000.toFixed(0)}`);

      const g722 = a.received.filter((p) => p.payloadType === 9);
      assert.ok(g722.length > 40, `A got ${g722.length} G.722 packets`);
      const dec = new G722Decoder();
      const atA = new Int16Array(g722.length * 320);
      g722.forEach((p, i) => dec.decode(p.payload, atA.subarray(i * 320, (i + 1) * 320)));
      const a600 = toneAmplitude(atA.subarray(16000), 600, 16000);
      const a1000 = toneAmplitude(atA.subarray(16000), 1000, 16000);
      assert.ok(
        a600 > 3000 && a1000 < 300,
        `our decoder on rtpengine's G.722: 600 Hz ${a600.toFixed(0)}, 1 kHz ${a1000.toFixed(0)}`,
      );
    } finally {
      a.close();
      b.close();
      await media.deleteSession('g722-call').catch(() => undefined);
      await svc.stop();
    }
  });
});
