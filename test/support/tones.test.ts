import assert from 'node:assert/strict';
import { sine, toneAmplitude, toneSeconds } from './tones.js';

describe('test support: telling which tones a recording holds', () => {
  /** 6 s of 440 Hz at 3000, as 20 ms packets where every 7th slips back 0.37 of a packet (a phase jump). */
  function jittered(): Int16Array {
    const s = sine(440, 6, 3000);
    const out = new Int16Array(s.length);
    let from = 0;
    for (let p = 0; p * 160 < s.length; p++) {
      if (p % 7 === 3) from -= 60;
      out.set(s.subarray(from, from + Math.min(160, s.length - p * 160)), p * 160);
      from += 160;
    }
    return out;
  }

  it('one Goertzel over the whole recording loses a tone with phase jumps; 50 ms blocks still hear all of it', () => {
    const audio = jittered();
    assert.ok(toneAmplitude(audio, 440) < 1000, 'the whole-block measure is fooled (why toneSeconds exists)');
    assert.ok(toneSeconds(audio, 440, 1000) >= 5.9);
    assert.equal(toneSeconds(audio, 660, 1000), 0);
  });

  it('counts only the seconds the tone is there', () => {
    const audio = new Int16Array(8000 * 4);
    audio.set(sine(660, 1.5, 3000), 8000);
    assert.equal(toneSeconds(audio, 660, 1000), 1.5);
  });
});
