import assert from 'node:assert/strict';
import { ConferenceMixer, MIX_FRAME } from '../../../media/mixer/conference-mixer.js';
import { SampleRing } from '../../../media/mixer/sample-ring.js';
import { decodeG711, encodeG711, parseRtp } from '../../../media/index.js';
import { sine, toneAmplitude } from '../../support/tones.js';

const TONES = { a: 440, b: 660, c: 880 } as const;
type Id = keyof typeof TONES;

/** Three participants each feeding its tone; returns what each was sent, decoded. */
function runConference(ticks: number, setup?: (m: ConferenceMixer) => void, pt: 0 | 8 = 0) {
  const mixer = new ConferenceMixer();
  const heard: Record<Id, Int16Array[]> = { a: [], b: [], c: [] };
  for (const id of Object.keys(TONES) as Id[]) {
    mixer.add(id, {
      payloadType: pt,
      send: (packet) => {
        const rtp = parseRtp(packet);
        assert.ok(rtp);
        assert.equal(rtp.payloadType, pt);
        heard[id].push(decodeG711(rtp.payload, pt));
      },
    });
  }
  setup?.(mixer);
  for (let t = 0; t < ticks; t += 1) {
    for (const id of Object.keys(TONES) as Id[]) {
      const frame = sine(TONES[id], MIX_FRAME / 8000, 6000, 8000, t * MIX_FRAME);
      mixer.participant(id)!.hear(encodeG711(frame, pt), pt);
    }
    mixer.tick();
  }
  const joined = (id: Id) => {
    const all = heard[id];
    const out = new Int16Array(all.length * MIX_FRAME);
    all.forEach((f, i) => out.set(f, i * MIX_FRAME));
    return out.subarray(4 * MIX_FRAME); // past the jitter ring's priming
  };
  return { a: joined('a'), b: joined('b'), c: joined('c') };
}

describe('ConferenceMixer (N-1 mixing)', () => {
  for (const pt of [0, 8] as const) {
    it(`each participant hears the two others' tones and not its own (${pt === 0 ? 'PCMU' : 'PCMA'})`, () => {
      const heard = runConference(50, undefined, pt);
      for (const id of Object.keys(TONES) as Id[]) {
        for (const other of Object.keys(TONES) as Id[]) {
          const amp = toneAmplitude(heard[id], TONES[other]);
          if (other === id) assert.ok(amp < 300, `${id} hears its own ${TONES[other]} Hz at ${amp.toFixed(0)}`);
          else assert.ok(amp > 4000, `${id} hears ${TONES[other]} Hz only at ${amp.toFixed(0)}`);
        }
      }
    });
  }

  it('a muted participant is heard by nobody but still hears the others', () => {
    const heard = runConference(50, (m) => (m.participant('a')!.muted = true));
    assert.ok(toneAmplitude(heard.b, TONES.a) < 300);
    assert.ok(toneAmplitude(heard.c, TONES.a) < 300);
    assert.ok(toneAmplitude(heard.a, TONES.b) > 4000);
    assert.ok(toneAmplitude(heard.c, TONES.b) > 4000);
  });

  it('a held participant is sent nothing and not heard', () => {
    const heard = runConference(50, (m) => (m.participant('c')!.held = true));
    assert.equal(heard.c.length, 0);
    assert.ok(toneAmplitude(heard.a, TONES.c) < 300);
    assert.ok(toneAmplitude(heard.a, TONES.b) > 4000);
  });

  it('the sum clips at 16 bits instead of wrapping', () => {
    const mixer = new ConferenceMixer();
    const out: Int16Array[] = [];
    mixer.add('listener', { send: (p) => out.push(decodeG711(parseRtp(p)!.payload, 0)) });
    const loud = new Int16Array(MIX_FRAME).fill(30000);
    for (const id of ['x', 'y']) mixer.add(id, { send: () => undefined });
    for (let t = 0; t < 4; t += 1) {
      for (const id of ['x', 'y']) mixer.participant(id)!.ring.writeSamples(loud);
      mixer.tick();
    }
    const last = out.at(-1)!;
    assert.ok(
      last.every((v) => v > 30000),
      `clipped mix should stay at full scale, got ${last[0]}`,
    );
  });

  it('RTP sequence and timestamp advance by one packet and 160 samples per tick', () => {
    const mixer = new ConferenceMixer();
    const packets: Buffer[] = [];
    mixer.add('a', { send: (p) => packets.push(Buffer.from(p)) });
    for (let t = 0; t < 5; t += 1) mixer.tick();
    const rtp = packets.map((p) => parseRtp(p)!);
    for (let i = 1; i < rtp.length; i += 1) {
      assert.equal(rtp[i]!.sequence, (rtp[i - 1]!.sequence + 1) & 0xffff);
      assert.equal(rtp[i]!.timestamp, (rtp[i - 1]!.timestamp + 160) >>> 0);
      assert.equal(rtp[i]!.ssrc, rtp[0]!.ssrc);
    }
    assert.equal(rtp[0]!.marker, true);
    assert.equal(rtp[1]!.marker, false);
  });

  it('an announcement is laid over what everybody hears', () => {
    const mixer = new ConferenceMixer();
    const out: Int16Array[] = [];
    mixer.add('a', { send: (p) => out.push(decodeG711(parseRtp(p)!.payload, 0)) });
    mixer.announce(sine(1000, 0.1));
    for (let t = 0; t < 5; t += 1) mixer.tick();
    const all = new Int16Array(out.length * MIX_FRAME);
    out.forEach((f, i) => all.set(f, i * MIX_FRAME));
    assert.ok(toneAmplitude(all, 1000) > 4000);
  });
});

describe('SampleRing (jitter buffer)', () => {
  it('waits for two frames before the first read, then gives frames in order', () => {
    const ring = new SampleRing();
    const out = new Int16Array(160);
    ring.writeSamples(new Int16Array(160).fill(1));
    assert.equal(ring.readFrame(out), false);
    ring.writeSamples(new Int16Array(160).fill(2));
    assert.equal(ring.readFrame(out), true);
    assert.equal(out[0], 1);
    assert.equal(ring.readFrame(out), true);
    assert.equal(out[0], 2);
    assert.equal(ring.readFrame(out), false);
    assert.equal(ring.underruns, 1);
  });

  it('keeps delay bounded: past the maximum it drops the oldest audio back to the target', () => {
    const ring = new SampleRing({ targetSamples: 320, maxSamples: 960 });
    for (let i = 0; i < 7; i += 1) ring.writeSamples(new Int16Array(160).fill(i));
    assert.equal(ring.size, 320);
    const out = new Int16Array(160);
    ring.readFrame(out);
    assert.equal(out[0], 5);
  });
});
