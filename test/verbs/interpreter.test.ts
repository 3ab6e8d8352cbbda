import assert from 'node:assert/strict';
import {
  Interpreter,
  VERB_REGISTRY,
  VerbTaskBase,
  WebhookFetchError,
  type VerbOutcome,
  parseVerbDocument,
  type ActionCallbackExtras,
  type DialResult,
  type FallbackPolicy,
  type HangupCause,
  type InterpreterStart,
  type PlayResult,
  type RecordResult,
  type VerbContext,
  type VerbDocument,
  type VerbEvent,
} from '../../verbs/index.js';

const doc = (body: string): VerbDocument => parseVerbDocument(`<Response>${body}</Response>`);

/** Resolves when `signal` aborts; a stand-in for media that runs until interrupted. */
function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** A VerbContext that writes what it is asked to do into `log` and serves documents from a table. */
class FakeCall implements VerbContext {
  readonly log: string[] = [];
  /** Why each hangup was asked for (a call not answered yet refuses with a status that says it). */
  readonly hangupCauses: Array<HangupCause | undefined> = [];
  readonly fetches: Array<{ url: string; extras: ActionCallbackExtras }> = [];
  readonly events: VerbEvent[] = [];
  readonly signals: AbortSignal[] = [];
  fallback: FallbackPolicy = { mode: 'drop', value: '' };
  documents = new Map<string, VerbDocument | WebhookFetchError | ((n: number) => VerbDocument)>();
  dialResult: DialResult = { status: 'completed', durationSeconds: 61 };
  /** Per Dial: whether it was told nothing runs after it. */
  readonly dialEndsCall: boolean[] = [];
  recordResult: RecordResult = { durationSeconds: 7, path: 'recordings/acc-1/rec1.wav' };
  missingAssets = new Set<string>();
  /** Operations that hang until their signal aborts (to test kill()). */
  blocking = new Set<string>();
  /** Called when an operation starts; lets a test act mid-verb. */
  onStart: (op: string) => void = () => undefined;

  async #op(op: string, signal?: AbortSignal): Promise<void> {
    this.log.push(op);
    if (signal !== undefined) this.signals.push(signal);
    this.onStart(op);
    const kind = op.split(':')[0]!;
    if (signal !== undefined && this.blocking.has(kind)) await untilAborted(signal);
  }

  async say(text: string, o: { signal: AbortSignal }): Promise<void> {
    await this.#op(`say:${text}`, o.signal);
  }
  async play(source: { kind: 'url'; url: string } | { kind: 'asset'; name: string }, o: { signal: AbortSignal }) {
    const what = source.kind === 'url' ? source.url : `asset ${source.name}`;
    await this.#op(`play:${what}`, o.signal);
    const missing = this.missingAssets.has(source.kind === 'asset' ? source.name : source.url);
    return (missing ? 'asset_missing' : 'played') as PlayResult;
  }
  async dial(
    target: { kind: 'number'; number: string } | { kind: 'extension'; extension: string },
    o: { signal: AbortSignal; endsCall?: boolean },
  ) {
    this.dialEndsCall.push(o.endsCall === true);
    await this.#op(`dial:${target.kind === 'number' ? target.number : target.extension}`, o.signal);
    return this.dialResult;
  }
  async record(o: { signal: AbortSignal }) {
    await this.#op('record', o.signal);
    return this.recordResult;
  }
  async startSessionRecording(o: { channels: string }) {
    await this.#op(`recordsession:${o.channels}`);
  }
  async pause(seconds: number, o: { signal: AbortSignal }) {
    await this.#op(`pause:${seconds}`, o.signal);
  }
  async gather() {
    await this.#op('gather');
    return { digits: '', end: 'timeout' as const };
  }
  canReject() {
    return false;
  }
  async reject(reason: string) {
    await this.#op(`reject:${reason}`);
  }
  async hangup(cause?: HangupCause) {
    this.hangupCauses.push(cause);
    await this.#op('hangup');
  }
  async fetchDocument(url: string, extras: ActionCallbackExtras, o: { signal: AbortSignal }) {
    this.fetches.push({ url, extras });
    await this.#op(`fetch:${url}`, o.signal);
    const answer = this.documents.get(url);
    if (answer === undefined) throw new WebhookFetchError('http_status', url, 'HTTP 404', { status: 404 });
    if (answer instanceof WebhookFetchError) throw answer;
    return typeof answer === 'function' ? answer(this.fetches.length) : answer;
  }
  async setCustomPayload(payload: Readonly<Record<string, unknown>>) {
    await this.#op(`payload:${JSON.stringify(payload)}`);
  }
  emit(event: VerbEvent) {
    this.events.push(event);
  }
}

describe('verbs/interpreter', () => {
  it('runs the verbs in document order, then hangs up at the end of the document', async () => {
    const call = new FakeCall();
    const end = await new Interpreter(call).run({
      document: doc(
        '<RecordSession/><Say loop="2">Karibu</Say><Play>https://m.example/a.wav</Play><Pause length="3"/>' +
          '<Dial>+254711000002</Dial><Record/>',
      ),
    });
    assert.deepEqual(end, { reason: 'end_of_document' });
    assert.deepEqual(call.log, [
      'recordsession:dual',
      'say:Karibu',
      'say:Karibu',
      'play:https://m.example/a.wav',
      'pause:3',
      'dial:+254711000002',
      'record',
      'hangup',
    ]);
  });

  it('a Dial is told it ends the call only when it is the last verb and has no action', async () => {
    const call = new FakeCall();
    call.documents.set('https://app.example/after', doc('<Dial>+254711000004</Dial>'));
    await new Interpreter(call).run({
      document: doc(
        '<Dial>+254711000001</Dial><Say>between</Say>' +
          '<Dial action="https://app.example/after">+254711000003</Dial>',
      ),
    });
    assert.deepEqual(
      call.log.filter((op) => op.startsWith('dial:')),
      ['dial:+254711000001', 'dial:+254711000003', 'dial:+254711000004'],
    );
    assert.deepEqual(call.dialEndsCall, [false, false, true]);
  });

  it('a document with customPayload attaches it to the call before its first verb runs', async () => {
    const call = new FakeCall();
    call.documents.set(
      'https://app.example/inbound',
      parseVerbDocument(`<Response customPayload='{"ticket":42}'><Say>hi</Say></Response>`),
    );
    await new Interpreter(call).run({ url: 'https://app.example/inbound' });
    assert.deepEqual(call.log.slice(1), ['payload:{"ticket":42}', 'say:hi', 'hangup']);
  });

  it('Hangup ends the call; verbs after it never run', async () => {
    const call = new FakeCall();
    const end = await new Interpreter(call).run({ document: doc('<Say>a</Say><Hangup/><Say>b</Say>') });
    assert.deepEqual(end, { reason: 'hangup' });
    assert.deepEqual(call.log, ['say:a', 'hangup']);
  });

  it('starting from a URL fetches the first document with no extras', async () => {
    const call = new FakeCall();
    call.documents.set('https://app.example/voice', doc('<Say>hi</Say>'));
    await new Interpreter(call).run({ url: 'https://app.example/voice' });
    assert.deepEqual(call.fetches, [{ url: 'https://app.example/voice', extras: {} }]);
    assert.deepEqual(call.log.slice(1), ['say:hi', 'hangup']);
  });

  it('Redirect replaces the document: base fields only, and the rest of the old document is dropped', async () => {
    const call = new FakeCall();
    call.documents.set('https://app.example/b', doc('<Say>from b</Say>'));
    await new Interpreter(call).run({
      document: doc('<Say>from a</Say><Redirect>https://app.example/b</Redirect><Say>never</Say>'),
    });
    assert.deepEqual(call.fetches, [{ url: 'https://app.example/b', extras: {} }]);
    assert.deepEqual(call.log, ['say:from a', 'fetch:https://app.example/b', 'say:from b', 'hangup']);
  });

  it('Dial with action hands control to the action document, with DialCallStatus and DialCallDuration', async () => {
    const call = new FakeCall();
    call.dialResult = { status: 'busy', durationSeconds: 0 };
    call.documents.set('https://app.example/dialed', doc('<Say>after dial</Say>'));
    await new Interpreter(call).run({
      document: doc('<Dial action="https://app.example/dialed">+254711000002</Dial><Say>never</Say>'),
    });
    assert.deepEqual(call.fetches, [
      { url: 'https://app.example/dialed', extras: { DialCallStatus: 'busy', DialCallDuration: 0 } },
    ]);
    assert.deepEqual(call.log.slice(-2), ['say:after dial', 'hangup']);
    assert.ok(!call.log.includes('say:never'));
  });

  it('a Dial the call ends in the middle of (caller hung up) still requests its action, and runs nothing after', async () => {
    const call = new FakeCall();
    call.blocking.add('dial');
    call.dialResult = { status: 'completed', durationSeconds: 12 };
    call.documents.set('https://app.example/dialed', doc('<Say>nobody hears this</Say>'));
    const interpreter = new Interpreter(call);
    call.onStart = (op) => {
      if (op.startsWith('dial:')) setTimeout(() => interpreter.kill(), 10);
    };
    const end = await interpreter.run({
      document: doc('<Dial action="https://app.example/dialed">+254711000002</Dial><Say>never</Say>'),
    });
    assert.equal(end.reason, 'killed');
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(call.fetches, [
      { url: 'https://app.example/dialed', extras: { DialCallStatus: 'completed', DialCallDuration: 12 } },
    ]);
    assert.ok(!call.log.some((l) => l.startsWith('say:')), call.log.join());
  });

  it('a Record the caller hangs up on still sends its recording to the action, and runs nothing after', async () => {
    const call = new FakeCall();
    call.blocking.add('record');
    call.documents.set('https://app.example/vm', doc('<Say>nobody hears this</Say>'));
    const interpreter = new Interpreter(call);
    call.onStart = (op) => {
      if (op === 'record') setTimeout(() => interpreter.kill(), 10);
    };
    const end = await interpreter.run({ document: doc('<Record action="https://app.example/vm"/><Say>never</Say>') });
    assert.equal(end.reason, 'killed');
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(call.fetches, [
      {
        url: 'https://app.example/vm',
        extras: { RecordingDuration: 7, RecordingPath: 'recordings/acc-1/rec1.wav' },
      },
    ]);
    assert.ok(!call.log.some((l) => l.startsWith('say:')), call.log.join());
  });

  it('Dial without action goes on with the next verb', async () => {
    const call = new FakeCall();
    await new Interpreter(call).run({ document: doc('<Dial><Extension>1001</Extension></Dial><Say>next</Say>') });
    assert.deepEqual(call.log, ['dial:1001', 'say:next', 'hangup']);
  });

  it('Record with action posts RecordingDuration and RecordingPath; with nothing recorded it goes on', async () => {
    const call = new FakeCall();
    call.documents.set('https://app.example/rec', doc('<Say>thanks</Say>'));
    await new Interpreter(call).run({ document: doc('<Record action="https://app.example/rec"/><Say>never</Say>') });
    assert.deepEqual(call.fetches[0]?.extras, { RecordingDuration: 7, RecordingPath: 'recordings/acc-1/rec1.wav' });
    assert.deepEqual(call.log.slice(-2), ['say:thanks', 'hangup']);

    const silent = new FakeCall();
    silent.recordResult = { durationSeconds: 0 };
    await new Interpreter(silent).run({ document: doc('<Record action="https://app.example/rec"/><Say>next</Say>') });
    assert.deepEqual(silent.fetches, []);
    assert.deepEqual(silent.log, ['record', 'say:next', 'hangup']);
  });

  it('a missing Play asset emits PLAY.0404 and the call continues', async () => {
    const call = new FakeCall();
    call.missingAssets.add('gone');
    await new Interpreter(call).run({ document: doc('<Play asset="gone" loop="5"/><Say>next</Say>') });
    assert.deepEqual(call.events, [{ code: 'PLAY.0404', event: 'play.asset_missing', data: { asset: 'gone' } }]);
    assert.deepEqual(call.log, ['play:asset gone', 'say:next', 'hangup']);
  });

  it('a Play URL that is not playable audio emits PLAY.0404 with the URL and the call continues', async () => {
    const call = new FakeCall();
    call.missingAssets.add('https://media.example/list.m3u');
    await new Interpreter(call).run({ document: doc('<Play>https://media.example/list.m3u</Play><Say>next</Say>') });
    assert.deepEqual(call.events, [
      { code: 'PLAY.0404', event: 'play.asset_missing', data: { url: 'https://media.example/list.m3u' } },
    ]);
    assert.deepEqual(call.log, ['play:https://media.example/list.m3u', 'say:next', 'hangup']);
  });

  it('more than maxRedirects Redirects in a row hang up instead of looping', async () => {
    const call = new FakeCall();
    for (let i = 0; i < 10; i++) {
      call.documents.set(`https://app.example/${i}`, doc(`<Redirect>https://app.example/${i + 1}</Redirect>`));
    }
    const end = await new Interpreter(call, { maxRedirects: 3 }).run({ url: 'https://app.example/0' });
    assert.equal(end.reason, 'redirect_limit');
    // the first fetch is the start, then 3 Redirects are followed and the 4th is refused
    assert.deepEqual(
      call.fetches.map((f) => f.url),
      ['https://app.example/0', 'https://app.example/1', 'https://app.example/2', 'https://app.example/3'],
    );
    assert.equal(call.log.at(-1), 'hangup');
  });

  it('a verb that spends call time between Redirects resets the count (an IVR menu may loop)', async () => {
    const call = new FakeCall();
    call.documents.set('https://app.example/menu', (n) =>
      n < 20 ? doc('<Say>menu</Say><Redirect>https://app.example/menu</Redirect>') : doc('<Hangup/>'),
    );
    const end = await new Interpreter(call, { maxRedirects: 3 }).run({ url: 'https://app.example/menu' });
    assert.deepEqual(end, { reason: 'hangup' });
    assert.equal(call.fetches.length, 20);
  });

  it('the default Redirect limit is 10', async () => {
    const call = new FakeCall();
    call.documents.set('https://app.example/self', doc('<Redirect>https://app.example/self</Redirect>'));
    const end = await new Interpreter(call).run({ url: 'https://app.example/self' });
    assert.equal(end.reason, 'redirect_limit');
    assert.equal(call.fetches.length, 11);
  });

  it('kill() mid-verb aborts that verb, runs nothing more and does not hang up', async () => {
    const call = new FakeCall();
    call.blocking.add('pause');
    const interpreter = new Interpreter(call);
    call.onStart = (op) => {
      if (op === 'pause:60') setImmediate(() => interpreter.kill());
    };
    const end = await interpreter.run({ document: doc('<Say>a</Say><Pause length="60"/><Say>b</Say>') });
    assert.deepEqual(end, { reason: 'killed' });
    assert.deepEqual(call.log, ['say:a', 'pause:60']);
    assert.ok(call.signals.at(-1)?.aborted, 'the paused verb was not told to stop');
    interpreter.kill(); // twice is fine
  });

  it('kill() stops a Say loop="0" that would otherwise repeat', async () => {
    const call = new FakeCall();
    const interpreter = new Interpreter(call);
    call.onStart = (op) => {
      if (op === 'say:menu' && call.log.length === 3) interpreter.kill();
    };
    const end = await interpreter.run({ document: doc('<Say loop="0">menu</Say>') });
    assert.deepEqual(end, { reason: 'killed' });
    assert.equal(call.log.length, 3);
  });

  it('kill() while a document is being fetched ends the run without a fallback', async () => {
    const call = new FakeCall();
    call.blocking.add('fetch');
    const interpreter = new Interpreter(call);
    call.onStart = (op) => {
      if (op.startsWith('fetch:')) setImmediate(() => interpreter.kill());
    };
    const end = await interpreter.run({ document: doc('<Redirect>https://app.example/slow</Redirect>') });
    assert.deepEqual(end, { reason: 'killed' });
    assert.deepEqual(call.events, []);
    assert.ok(!call.log.includes('hangup'));
  });

  describe('a failed fetch emits WH.0400 and runs the fallback', () => {
    const failing = new WebhookFetchError('timeout', 'https://app.example/next', 'no reply');

    async function runWith(fallback: FallbackPolicy) {
      const call = new FakeCall();
      call.fallback = fallback;
      call.documents.set('https://app.example/next', failing);
      const end = await new Interpreter(call).run({
        document: doc('<Say>a</Say><Redirect>https://app.example/next</Redirect>'),
      });
      assert.equal(end.reason, 'fallback');
      assert.deepEqual(call.events, [
        {
          code: 'WH.0400',
          event: 'webhook.failed',
          data: { url: 'https://app.example/next', reason: 'timeout', fallback: fallback.mode },
        },
      ]);
      return call.log.slice(2); // after 'say:a' and the fetch
    }

    it('message: speak the text, then hang up', async () => {
      assert.deepEqual(await runWith({ mode: 'message', value: 'Sorry, try later' }), [
        'say:Sorry, try later',
        'hangup',
      ]);
    });

    it('play: play the URL, then hang up', async () => {
      assert.deepEqual(await runWith({ mode: 'play', value: 'https://m.example/sorry.wav' }), [
        'play:https://m.example/sorry.wav',
        'hangup',
      ]);
    });

    it('drop: hang up at once', async () => {
      assert.deepEqual(await runWith({ mode: 'drop', value: '' }), ['hangup']);
    });
  });

  it('each hangup says why: the Hangup verb, the end of a document, the fallback, a Redirect loop, an error', async () => {
    const causeOf = async (call: FakeCall, start: InterpreterStart, opts = {}) => {
      await new Interpreter(call, opts).run(start);
      return call.hangupCauses;
    };
    assert.deepEqual(await causeOf(new FakeCall(), { document: doc('<Hangup/>') }), ['verb']);
    assert.deepEqual(await causeOf(new FakeCall(), { document: doc('') }), ['end_of_document']);
    assert.deepEqual(await causeOf(new FakeCall(), { url: 'https://app.example/none' }), ['fallback']);
    const looping = new FakeCall();
    looping.documents.set('https://app.example/0', doc('<Redirect>https://app.example/0</Redirect>'));
    assert.deepEqual(await causeOf(looping, { url: 'https://app.example/0' }, { maxRedirects: 2 }), ['redirect_limit']);
    const broken = new FakeCall();
    broken.say = () => Promise.reject(new Error('rtpengine gone'));
    assert.deepEqual(await causeOf(broken, { document: doc('<Say>x</Say>') }), ['error']);
  });

  it('an operation that throws ends the run with reason error and a hangup', async () => {
    const call = new FakeCall();
    call.dial = () => Promise.reject(new Error('rtpengine gone'));
    const end = await new Interpreter(call).run({ document: doc('<Dial>+254711000002</Dial><Say>x</Say>') });
    assert.equal(end.reason, 'error');
    assert.deepEqual(call.log, ['hangup']);
  });

  describe('a platform failure while a document runs: told to onError, then the fallback as for a failed webhook', () => {
    /** A verb class that fails as a bug would: a plain Error, nothing the customer's document did. */
    class BrokenPause extends VerbTaskBase {
      readonly name = 'Pause' as const;
      async exec(): Promise<VerbOutcome> {
        throw new TypeError("Cannot read properties of undefined (reading 'length')");
      }
    }
    const registry = { ...VERB_REGISTRY, Pause: BrokenPause };
    const runBroken = async (fallback: FallbackPolicy) => {
      const call = new FakeCall();
      call.fallback = fallback;
      const told: unknown[] = [];
      const end = await new Interpreter(call, { registry, onError: (e) => told.push(e) }).run({
        document: doc('<Say>before</Say><Pause length="1"/><Say>never</Say>'),
      });
      return { call, end, told };
    };

    it('message: spoken, then hung up with cause error; the verbs after it never run; no WH.0400', async () => {
      const { call, end, told } = await runBroken({ mode: 'message', value: 'Sorry, try later.' });
      assert.equal(end.reason, 'error');
      assert.equal(told.length, 1);
      assert.ok(told[0] instanceof TypeError);
      assert.deepEqual(call.log, ['say:before', 'say:Sorry, try later.', 'hangup']);
      assert.deepEqual(call.hangupCauses, ['error']);
      assert.deepEqual(call.events, []);
    });

    it('play: the audio, then hung up; drop: hung up at once', async () => {
      const play = await runBroken({ mode: 'play', value: 'https://cdn.example/sorry.wav' });
      assert.deepEqual(play.call.log, ['say:before', 'play:https://cdn.example/sorry.wav', 'hangup']);
      const drop = await runBroken({ mode: 'drop', value: '' });
      assert.deepEqual(drop.call.log, ['say:before', 'hangup']);
      assert.deepEqual(drop.call.hangupCauses, ['error']);
    });

    it('a fallback that fails too (the media is what broke) still hangs up', async () => {
      const call = new FakeCall();
      call.fallback = { mode: 'message', value: 'Sorry.' };
      call.say = () => Promise.reject(new Error('espeak-ng crashed'));
      const told: unknown[] = [];
      const end = await new Interpreter(call, { onError: (e) => told.push(e) }).run({ document: doc('<Say>x</Say>') });
      assert.equal(end.reason, 'error');
      assert.equal(told.length, 1);
      assert.deepEqual(call.hangupCauses, ['error']);
    });
  });
});
