import assert from 'node:assert/strict';
import { detectAnsweredBy } from '../../calls/machine-detection.js';
import { ManualClock } from '../../kit/index.js';
import { MediaError } from '../../media/index.js';

/** Where the detector's audio comes from failing: a verdict of `unknown` at once, never a wait to the timeout. */
describe('machine detection without the callee audio', () => {
  const refused = () => Promise.reject(new MediaError('MEDIA_ENGINE_ERROR', 'subscribe refused'));

  it('decides unknown (no_audio) at once when the media engine gives no copy of the audio', async () => {
    const clock = new ManualClock(1000);
    const r = await detectAnsweredBy(refused, { mode: 'Enable' }, new AbortController().signal, clock);
    assert.equal(r?.answeredBy, 'unknown');
    assert.equal(r?.reason, 'no_audio');
    assert.equal(r?.durationMs, 0);
  });

  it('reports nothing when the call or the bridge already ended', async () => {
    const ended = new AbortController();
    const failing = () => {
      ended.abort();
      return refused();
    };
    const r = await detectAnsweredBy(failing, { mode: 'Enable' }, ended.signal, new ManualClock(1000));
    assert.equal(r, undefined);
  });
});
