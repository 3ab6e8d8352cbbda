import assert from 'node:assert/strict';
import { parseVerbDocument, VerbDocumentError, type DialVerb } from '../../verbs/index.js';

const dialOf = (xml: string) => parseVerbDocument(`<Response>${xml}</Response>`).verbs[0] as DialVerb;

describe('verbs: <Dial><Conference> (parse-conference.ts)', () => {
  it('parses every attribute, and TwiML defaults when absent', () => {
    const full = dialOf(
      `<Dial action="https://x.example/after"><Conference startConferenceOnEnter="false" endConferenceOnExit="true"
        muted="true" beep="onExit" waitUrl="https://x.example/hold.wav" maxParticipants="3"
        record="record-from-start">standup</Conference></Dial>`,
    );
    assert.deepEqual(full.target, {
      kind: 'conference',
      conference: {
        name: 'standup',
        startConferenceOnEnter: false,
        endConferenceOnExit: true,
        muted: true,
        beepOnEnter: false,
        beepOnExit: true,
        waitUrl: 'https://x.example/hold.wav',
        maxParticipants: 3,
        record: 'record-from-start',
      },
    });
    assert.equal(full.action, 'https://x.example/after');
    const plain = dialOf('<Dial><Conference>room 7</Conference></Dial>');
    assert.deepEqual(plain.target, {
      kind: 'conference',
      conference: {
        name: 'room 7',
        startConferenceOnEnter: true,
        endConferenceOnExit: false,
        muted: false,
        beepOnEnter: true,
        beepOnExit: true,
        maxParticipants: 250,
        record: 'do-not-record',
      },
    });
    assert.deepEqual(plain.targets, [plain.target]);
  });

  for (const [what, xml, message] of [
    ['an empty name', '<Dial><Conference> </Conference></Dial>', /no name/],
    ['a name over 64 characters', `<Dial><Conference>${'r'.repeat(65)}</Conference></Dial>`, /limit is 64/],
    [
      'a Conference beside a Number',
      '<Dial><Conference>a</Conference><Number>+254700000001</Number></Dial>',
      /no other noun/,
    ],
    ['a relative waitUrl', '<Dial><Conference waitUrl="/hold.wav">a</Conference></Dial>', /waitUrl/],
    ['an unknown beep', '<Dial><Conference beep="loud">a</Conference></Dial>', /beep/],
    ['maxParticipants over 250', '<Dial><Conference maxParticipants="251">a</Conference></Dial>', /maxParticipants/],
    ['maxParticipants of 1', '<Dial><Conference maxParticipants="1">a</Conference></Dial>', /maxParticipants/],
  ] as const) {
    it(`refuses ${what}`, () => {
      assert.throws(
        () => dialOf(xml),
        (e: unknown) => e instanceof VerbDocumentError && message.test(e.message),
      );
    });
  }
});
