import assert from 'node:assert/strict';
import { EventCodes } from '../../events/index.js';
import {
  Interpreter,
  VerbDocumentError,
  parseVerbDocument,
  type GatherOptions,
  type GatherResult,
  type VerbContext,
  type VerbEvent,
} from '../../verbs/index.js';

/** A context whose Gather answers `result` after running the prompts with a barge-in signal the test controls. */
function fakeCall(o: { result?: GatherResult; ringing?: boolean; bargeAfter?: string } = {}) {
  const log: string[] = [];
  const events: VerbEvent[] = [];
  const gathers: GatherOptions[] = [];
  const fetches: Array<{ url: string; extras: unknown }> = [];
  const docs = new Map<string, string>();
  const barge = new AbortController();
  const ctx: VerbContext = {
    say: async (text, opt) => {
      log.push(`say:${text}${opt.signal.aborted ? ' (cut)' : ''}`);
      if (text === o.bargeAfter) barge.abort();
    },
    play: async () => 'played',
    dial: async () => ({ status: 'completed', durationSeconds: 0 }),
    record: async () => ({ durationSeconds: 0 }),
    startSessionRecording: async () => undefined,
    pause: async (s) => void log.push(`pause:${s}`),
    gather: async (options) => {
      gathers.push(options);
      options.onListening?.();
      await options.prompts(barge.signal);
      return o.result ?? { digits: '', end: 'timeout' };
    },
    canReject: () => o.ringing ?? false,
    reject: async (reason) => void log.push(`reject:${reason}`),
    hangup: async () => void log.push('hangup'),
    fetchDocument: async (url, extras) => {
      fetches.push({ url, extras });
      return parseVerbDocument(docs.get(url) ?? '<Response><Hangup/></Response>');
    },
    setCustomPayload: async () => undefined,
    emit: (e) => void events.push(e),
    fallback: { mode: 'drop', value: '' },
  };
  return { ctx, log, events, gathers, fetches, docs };
}

describe('verbs: Gather and Reject', () => {
  it('parses Gather with its defaults and nested prompts', () => {
    const doc = parseVerbDocument(
      '<Response><Gather><Say>Press one</Say><Pause length="2"/><Play>https://m.example/a.wav</Play></Gather></Response>',
    );
    const g = doc.verbs[0]!;
    assert.equal(g.verb, 'Gather');
    if (g.verb !== 'Gather') return;
    assert.equal(g.dtmf, true);
    assert.equal(g.speech, false);
    assert.equal(g.finishOnKey, '#');
    assert.equal(g.timeout, 5);
    assert.equal(g.numDigits, undefined);
    assert.equal(g.actionOnEmptyResult, false);
    assert.deepEqual(
      g.prompts.map((p) => p.verb),
      ['Say', 'Pause', 'Play'],
    );
  });

  it('parses every Gather attribute; finishOnKey="" means none; hints are a trimmed list', () => {
    const g = parseVerbDocument(
      '<Response><Gather input="dtmf speech" numDigits="4" finishOnKey="" timeout="9" action="https://a.example/g"' +
        ' actionOnEmptyResult="true" hints=" sales, support ,,yes"/></Response>',
    ).verbs[0]!;
    assert.deepEqual(g, {
      verb: 'Gather',
      line: 1,
      dtmf: true,
      speech: true,
      numDigits: 4,
      finishOnKey: '',
      timeout: 9,
      action: 'https://a.example/g',
      method: 'POST',
      actionOnEmptyResult: true,
      hints: ['sales', 'support', 'yes'],
      prompts: [],
    });
  });

  for (const [xml, expected] of [
    ['<Gather input="keys"/>', /Gather.*input.*expected dtmf, speech, or dtmf speech/],
    ['<Gather numDigits="0"/>', /numDigits.*expected an integer from 1 to 64/],
    ['<Gather finishOnKey="##"/>', /finishOnKey.*expected one of the keys 0-9 \* #, or empty for none/],
    ['<Gather timeout="0"/>', /timeout.*expected an integer number of seconds from 1 to 600/],
    ['<Gather method="GET"/>', /method.*POST/],
    ['<Gather action="ftp://x.example/a"/>', /Gather action 'ftp:\/\/x.example\/a' uses ftp/],
    ['<Gather><Dial>+254711000001</Dial></Gather>', /Element 'Dial': This element is not expected/],
    ['<Gather><Gather/></Gather>', /Element 'Gather': This element is not expected/],
    ['<Reject reason="later"/>', /Reject.*reason.*expected busy or rejected/],
    ['<Say>Hello</Say><Reject/>', /line 1: Reject must be the first verb/],
  ] as const) {
    it(`refuses ${xml}`, () => {
      assert.throws(
        () => parseVerbDocument(`<Response>${xml}</Response>`),
        (e: unknown) => e instanceof VerbDocumentError && expected.test(e.problems.join('; ')),
      );
    });
  }

  it('a key during the prompts: the prompt is cut, the rest skipped, and the action gets Digits', async () => {
    const call = fakeCall({ result: { digits: '42', end: 'finish_key' }, bargeAfter: 'one' });
    const end = await new Interpreter(call.ctx).run({
      document: parseVerbDocument(
        '<Response><Gather action="https://a.example/g" numDigits="2"><Say>one</Say><Say>two</Say></Gather>' +
          '<Say>not reached</Say></Response>',
      ),
    });
    assert.equal(end.reason, 'hangup'); // the action's document: <Hangup/>
    assert.deepEqual(call.log, ['say:one', 'hangup']);
    assert.deepEqual(call.fetches, [{ url: 'https://a.example/g', extras: { Digits: '42' } }]);
    assert.equal(call.gathers[0]!.numDigits, 2);
    assert.deepEqual(
      call.events.map((e) => [e.code, e.data]),
      [
        [EventCodes.gatherStarted, { input: 'dtmf', numDigits: 2, timeout: 5 }],
        [EventCodes.gatherCompleted, { digits: '42', end: 'finish_key' }],
      ],
    );
  });

  it('nothing heard: the next verb runs; with actionOnEmptyResult the action gets empty Digits', async () => {
    const plain = fakeCall();
    await new Interpreter(plain.ctx).run({
      document: parseVerbDocument('<Response><Gather action="https://a.example/g"/><Say>bye</Say></Response>'),
    });
    assert.deepEqual(plain.log, ['say:bye', 'hangup']);
    assert.equal(plain.fetches.length, 0);
    const empty = fakeCall();
    await new Interpreter(empty.ctx).run({
      document: parseVerbDocument(
        '<Response><Gather action="https://a.example/g" actionOnEmptyResult="true"/><Say>bye</Say></Response>',
      ),
    });
    assert.deepEqual(empty.fetches, [{ url: 'https://a.example/g', extras: { Digits: '' } }]);
  });

  it('speech heard goes to the action as SpeechResult and Confidence', async () => {
    const call = fakeCall({ result: { digits: '', speech: { text: 'sales', confidence: 0.9 }, end: 'speech' } });
    await new Interpreter(call.ctx).run({
      document: parseVerbDocument(
        '<Response><Gather input="speech" hints="sales" action="https://a.example/g"/></Response>',
      ),
    });
    assert.deepEqual(call.fetches[0]!.extras, { Digits: '', SpeechResult: 'sales', Confidence: 0.9 });
    assert.deepEqual(call.gathers[0]!.hints, ['sales']);
    assert.equal(call.gathers[0]!.dtmf, false);
  });

  it('Reject refuses a ringing call and ends the verbs without a hangup of their own', async () => {
    const call = fakeCall({ ringing: true });
    const end = await new Interpreter(call.ctx).run({
      document: parseVerbDocument('<Response><Reject reason="busy"/></Response>'),
    });
    assert.deepEqual(end, { reason: 'rejected' });
    assert.deepEqual(call.log, ['reject:busy']);
  });

  it('a fetched document that Rejects a call already answered is a document error: fallback, WH.0400', async () => {
    const call = fakeCall({ ringing: false });
    call.docs.set('https://a.example/next', '<Response><Reject/></Response>');
    const end = await new Interpreter(call.ctx).run({
      document: parseVerbDocument('<Response><Say>hi</Say><Redirect>https://a.example/next</Redirect></Response>'),
    });
    assert.equal(end.reason, 'fallback');
    assert.ok(!call.log.some((l) => l.startsWith('reject')), call.log.join());
    const failed = call.events.find((e) => e.code === EventCodes.webhookFailed);
    assert.equal(failed?.data && 'reason' in failed.data ? failed.data.reason : undefined, 'invalid_document');
  });
});
