import assert from 'node:assert/strict';
import { parseVerbDocument, VerbDocumentError, type DialVerb } from '../../verbs/index.js';

const parse = (xml: string) => parseVerbDocument(`<Response>${xml}</Response>`);
const dialOf = (xml: string) => parse(xml).verbs[0] as DialVerb;

describe('verbs: <Dial><Number machineDetection> (TwiML answering machine detection)', () => {
  it('reads every attribute into milliseconds, the timeout from seconds', () => {
    const dial = dialOf(
      `<Dial><Number machineDetection="DetectMessageEnd" machineDetectionTimeout="20"
        machineDetectionSpeechThreshold="2400" machineDetectionSpeechEndThreshold="1000"
        machineDetectionSilenceTimeout="4000" amdStatusCallback="https://x.example/amd"
        amdStatusCallbackMethod="POST">+254700000001</Number></Dial>`,
    );
    assert.deepEqual(dial.target, {
      kind: 'number',
      number: '+254700000001',
      machineDetection: {
        mode: 'DetectMessageEnd',
        timeoutMs: 20_000,
        greetingMs: 2400,
        endSilenceMs: 1000,
        initialSilenceMs: 4000,
        statusCallback: 'https://x.example/amd',
      },
    });
  });

  it('takes machineDetection alone (the detector defaults), and no detection without it', () => {
    const dial = dialOf(
      '<Dial><Number machineDetection="Enable">+254700000001</Number><Number>+254700000002</Number></Dial>',
    );
    assert.deepEqual(dial.targets[0], {
      kind: 'number',
      number: '+254700000001',
      machineDetection: { mode: 'Enable' },
    });
    assert.deepEqual(dial.targets[1], { kind: 'number', number: '+254700000002' });
  });

  it('the attributes are known ones, not reported as ignored', () => {
    const doc = parse(
      '<Dial><Number machineDetection="Enable" amdStatusCallback="https://x.example/a">+254700000001</Number></Dial>',
    );
    assert.equal(doc.ignoredAttributes, undefined);
  });

  for (const [attribute, value, expected] of [
    ['machineDetection', 'Yes', /Enable or DetectMessageEnd/],
    ['machineDetectionTimeout', '90', /from 3 to 60/],
    ['machineDetectionTimeout', 'soon', /from 3 to 60/],
    ['machineDetectionSpeechThreshold', '999', /milliseconds from 1000 to 6000/],
    ['machineDetectionSpeechEndThreshold', '5001', /milliseconds from 500 to 5000/],
    ['machineDetectionSilenceTimeout', '1500', /milliseconds from 2000 to 10000/],
    ['amdStatusCallbackMethod', 'GET', /POST/],
    ['amdStatusCallback', '/relative', /amdStatusCallback '\/relative' is not an absolute URL/],
    ['amdStatusCallback', 'ftp://x.example/a', /amdStatusCallback .* uses ftp/],
  ] as const) {
    it(`refuses ${attribute}="${value}", naming the attribute and what is expected`, () => {
      const mode = attribute === 'machineDetection' ? '' : 'machineDetection="Enable" ';
      const xml = `<Dial><Number ${mode}${attribute}="${value}">+254700000001</Number></Dial>`;
      assert.throws(
        () => dialOf(xml),
        (e: unknown) =>
          e instanceof VerbDocumentError && e.message.includes(attribute) && expected.test(e.message)
            ? true
            : assert.fail(String((e as Error).message)),
      );
    });
  }
});
