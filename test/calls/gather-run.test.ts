import assert from 'node:assert/strict';
import { CallDigits, type DigitSource } from '../../calls/call-digits.js';
import { parseDtmfInfo } from '../../calls/dtmf-info.js';
import { runGather } from '../../calls/gather-run.js';
import type { SpeechInput } from '../../calls/speech-input.js';
import { ManualClock } from '../../kit/index.js';
import type { GatherOptions, GatherResult } from '../../verbs/index.js';

const flush = () => new Promise((r) => setImmediate(r));

/** A Gather over CallDigits on a ManualClock; the prompts run until the test ends them or barge-in cuts them. */
function gather(options: Partial<GatherOptions> = {}, speech?: SpeechInput) {
  const clock = new ManualClock(1_000_000);
  const digits = new CallDigits(clock);
  let endPrompts!: () => void;
  let bargedAt: number | undefined;
  const prompts = (bargeIn: AbortSignal) =>
    new Promise<void>((resolve) => {
      endPrompts = resolve;
      bargeIn.addEventListener('abort', () => {
        bargedAt = clock.now();
        resolve();
      });
    });
  let result: GatherResult | undefined;
  const abort = new AbortController();
  const done = runGather(
    { clock, listen: (fn) => digits.listen(fn), speech, callId: 'c1' },
    {
      dtmf: true,
      speech: false,
      finishOnKey: '#',
      timeoutSeconds: 5,
      hints: [],
      prompts,
      signal: abort.signal,
      ...options,
    },
  ).then((r) => (result = r));
  const press = async (keys: string, source: DigitSource = 'rtp-event') => {
    for (const k of keys) digits.press(k, source);
    await flush();
  };
  return {
    clock,
    press,
    endPrompts: async () => (endPrompts(), await flush()),
    advance: async (ms: number) => (clock.advance(ms), await flush()),
    abort,
    done,
    get result() {
      return result;
    },
    get bargedAt() {
      return bargedAt;
    },
  };
}

describe('calls/gather-run: one Gather on a call (ManualClock)', () => {
  it('the first key barges in on the prompts; numDigits ends it at once', async () => {
    const g = gather({ numDigits: 3 });
    await g.press('1');
    assert.equal(g.bargedAt, 1_000_000, 'barged in at the first key');
    await g.press('23');
    assert.deepEqual(await g.done, { digits: '123', end: 'num_digits' });
  });

  it('finishOnKey submits what was typed, without the key', async () => {
    const g = gather();
    await g.press('98#');
    assert.deepEqual(await g.done, { digits: '98', end: 'finish_key' });
  });

  it('with finishOnKey empty, # is a digit like any other', async () => {
    const g = gather({ finishOnKey: '', numDigits: 2 });
    await g.press('#5');
    assert.deepEqual(await g.done, { digits: '#5', end: 'num_digits' });
  });

  it('timeout counts from the end of the prompts, then from the last key', async () => {
    const g = gather({ timeoutSeconds: 5 });
    await g.advance(60_000); // the prompts play; no timer runs yet
    assert.equal(g.result, undefined);
    await g.endPrompts();
    await g.advance(4_000);
    await g.press('7');
    await g.advance(4_999);
    assert.equal(g.result, undefined, 'the key restarted the timeout');
    await g.advance(1);
    assert.deepEqual(g.result, { digits: '7', end: 'timeout' });
  });

  it('no input: ends empty after the timeout', async () => {
    const g = gather({ timeoutSeconds: 3 });
    await g.endPrompts();
    await g.advance(3_000);
    assert.deepEqual(await g.done, { digits: '', end: 'timeout' });
  });

  it('a speech-only Gather ignores keys, and without a recogniser hears nothing', async () => {
    const g = gather({ dtmf: false, speech: true, timeoutSeconds: 2 });
    await g.press('12');
    assert.equal(g.bargedAt, undefined);
    await g.endPrompts();
    await g.advance(2_000);
    assert.deepEqual(await g.done, { digits: '', end: 'timeout' });
  });

  it('speech from the recogniser barges in and ends the Gather with SpeechResult', async () => {
    let heard!: (r: { text: string; confidence: number }) => void;
    let started!: () => void;
    const recogniser: SpeechInput = {
      recognise: (_id, o) => {
        started = o.onSpeechStart!;
        return new Promise((r) => (heard = r));
      },
    };
    const g = gather({ speech: true, hints: ['sales'] }, recogniser);
    started();
    assert.equal(g.bargedAt, 1_000_000);
    heard({ text: 'sales', confidence: 0.8 });
    assert.deepEqual(await g.done, { digits: '', speech: { text: 'sales', confidence: 0.8 }, end: 'speech' });
  });

  it('with speech, the timeout counts from when the recogniser hears, and stops once the caller speaks', async () => {
    let heard!: (r: { text: string; confidence: number } | null) => void;
    let o!: Parameters<SpeechInput['recognise']>[1];
    const recogniser: SpeechInput = {
      recognise: (_id, options) => {
        o = options;
        return new Promise((r) => (heard = r));
      },
    };
    const g = gather({ dtmf: false, speech: true, timeoutSeconds: 5 }, recogniser);
    await g.endPrompts();
    await g.advance(7_000); // the recogniser still opening (a busy box): the caller's words are being kept
    assert.equal(g.result, undefined, 'no timeout while the recogniser cannot hear yet');
    o.onListening!();
    await g.advance(3_000);
    o.onSpeechStart!(); // what the caller said while it opened
    await g.advance(10_000);
    assert.equal(g.result, undefined, 'no timeout while an utterance is being recognised');
    heard({ text: 'support', confidence: 0.7 });
    assert.deepEqual(await g.done, { digits: '', speech: { text: 'support', confidence: 0.7 }, end: 'speech' });
  });

  it('with speech, a recogniser that never opens still lets the Gather end, its timeout and a grace later', async () => {
    const recogniser: SpeechInput = { recognise: () => new Promise(() => undefined) };
    const g = gather({ dtmf: false, speech: true, timeoutSeconds: 5 }, recogniser);
    await g.endPrompts();
    await g.advance(14_000);
    assert.equal(g.result, undefined);
    await g.advance(1_000);
    assert.deepEqual(await g.done, { digits: '', end: 'timeout' });
  });

  it('with speech, an utterance nothing was recognised in ends a speech-only Gather at once', async () => {
    let heard!: (r: null) => void;
    let o!: Parameters<SpeechInput['recognise']>[1];
    const recogniser: SpeechInput = {
      recognise: (_id, options) => ((o = options), new Promise((r) => (heard = r))),
    };
    const g = gather({ dtmf: false, speech: true, timeoutSeconds: 5 }, recogniser);
    await g.endPrompts();
    o.onListening!();
    o.onSpeechStart!();
    heard(null);
    assert.deepEqual(await g.done, { digits: '', end: 'timeout' });
  });

  it('the call ending stops it and leaves no timer behind', async () => {
    const g = gather();
    await g.endPrompts();
    await g.press('4');
    g.abort.abort();
    assert.deepEqual(await g.done, { digits: '4', end: 'stopped' });
    assert.equal(g.clock.pendingTimers, 0);
  });
});

describe('calls/call-digits: one press reported by two sources counts once', () => {
  it('the same key from another source within the press is dropped; from the same source it is a new press', () => {
    const clock = new ManualClock(0);
    const digits = new CallDigits(clock);
    const heard: string[] = [];
    digits.listen((d) => heard.push(`${d.digit}:${d.source}`));
    digits.press('5', 'rtp-event');
    clock.advance(280);
    assert.equal(digits.press('5', 'rfc4733-log', 280), false, "rtpengine's log of the same press");
    clock.advance(100);
    assert.equal(digits.press('5', 'sip-info'), false, 'an INFO for it too');
    digits.press('5', 'rtp-event'); // the caller presses 5 again
    clock.advance(50);
    digits.press('6', 'rtp-event');
    clock.advance(230);
    assert.equal(digits.press('5', 'rfc4733-log', 280), false, 'the second 5, logged after the 6 began');
    clock.advance(2000);
    assert.equal(digits.press('5', 'sip-info'), true, 'long after: a new press');
    assert.deepEqual(heard, ['5:rtp-event', '5:rtp-event', '6:rtp-event', '5:sip-info']);
  });
});

describe('calls/dtmf-info: keys in SIP INFO bodies', () => {
  it('reads application/dtmf-relay and application/dtmf', () => {
    assert.deepEqual(parseDtmfInfo('application/dtmf-relay', 'Signal=5\r\nDuration=160\r\n'), {
      digit: '5',
      durationMs: 160,
    });
    assert.deepEqual(parseDtmfInfo('Application/DTMF-Relay; charset=x', 'Duration=100\nSignal= #\n'), {
      digit: '#',
      durationMs: 100,
    });
    assert.deepEqual(parseDtmfInfo('application/dtmf-relay', 'Signal=10\r\n'), { digit: '*', durationMs: 0 });
    assert.deepEqual(parseDtmfInfo('application/dtmf', '7\r\n'), { digit: '7', durationMs: 0 });
  });

  it('refuses other bodies, bad keys and oversized bodies', () => {
    assert.equal(parseDtmfInfo('application/sdp', 'Signal=5'), undefined);
    assert.equal(parseDtmfInfo(undefined, 'Signal=5'), undefined);
    assert.equal(parseDtmfInfo('application/dtmf-relay', 'Signal=X\r\n'), undefined);
    assert.equal(parseDtmfInfo('application/dtmf-relay', 'Duration=160\r\n'), undefined);
    assert.equal(parseDtmfInfo('application/dtmf', '55'), undefined);
    assert.equal(parseDtmfInfo('application/dtmf-relay', `Signal=5\r\n${'x'.repeat(300)}`), undefined);
  });
});
