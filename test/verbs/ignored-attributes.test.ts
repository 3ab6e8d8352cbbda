import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import libxmljs from 'libxmljs2';
import { EventCodes } from '../../events/index.js';
import {
  Interpreter,
  VerbDocumentError,
  parseVerbDocument,
  type VerbContext,
  type VerbDocument,
  type VerbEvent,
} from '../../verbs/index.js';
import { KNOWN_ATTRIBUTES, MAX_IGNORED_PER_DOCUMENT } from '../../verbs/ignored-attributes.js';

/**
 * Issue 15, item 7: a document written for TwiML is not rejected whole for one attribute Simu does not know. The
 * attribute is ignored, listed on the document, and reported once per call as VERB.0299; unknown verbs and bad
 * values of known attributes stay errors.
 */
describe('verbs: unknown attributes are ignored and reported (VERB.0299)', () => {
  it('a TwiML document with attributes Simu does not know parses and runs as if they were absent', () => {
    const doc = parseVerbDocument(
      `<Response>
  <Say voice="en" rate="fast">Hello</Say>
  <Play digits="1" loop="2">https://media.example/a.wav</Play>
  <Dial hangupOnStar="true" timeout="20"><Number sendDigits="1234">+254700000002</Number></Dial>
  <Record transcribe="true" maxLength="30"/>
  <Pause length="2" foo="x"/>
  <Hangup reason="done"/>
</Response>`,
    );
    assert.deepEqual(
      doc.verbs.map((v) => v.verb),
      ['Say', 'Play', 'Dial', 'Record', 'Pause', 'Hangup'],
    );
    const dial = doc.verbs[2] as { timeout: number; target: unknown };
    assert.equal(dial.timeout, 20);
    assert.deepEqual(dial.target, { kind: 'number', number: '+254700000002' });
    assert.deepEqual(doc.ignoredAttributes, [
      { element: 'Say', attribute: 'rate', line: 2 },
      { element: 'Play', attribute: 'digits', line: 3 },
      { element: 'Dial', attribute: 'hangupOnStar', line: 4 },
      { element: 'Number', attribute: 'sendDigits', line: 4 },
      { element: 'Record', attribute: 'transcribe', line: 5 },
      { element: 'Pause', attribute: 'foo', line: 6 },
      { element: 'Hangup', attribute: 'reason', line: 7 },
    ]);
    assert.equal(parseVerbDocument('<Response><Say>hi</Say></Response>').ignoredAttributes, undefined);
  });

  it('unknown verbs and bad values of known attributes stay errors', () => {
    const bad = [
      '<Response><Pay input="dtmf"/></Response>',
      '<Response><Say loop="many" rate="fast">x</Say></Response>',
      '<Response><Dial method="GET">+254700000002</Dial></Response>',
      '<Response><Dial><Client>bob</Client></Dial></Response>',
      '<Response><Dial><Number sendDigits="1">call-me</Number></Dial></Response>',
    ];
    for (const xml of bad) assert.throws(() => parseVerbDocument(xml), VerbDocumentError, xml);
  });

  it('the list is bounded however many invented attributes a document carries', () => {
    const attrs = Array.from({ length: 500 }, (_, i) => `a${i}="1"`).join(' ');
    const doc = parseVerbDocument(`<Response><Say ${attrs}>x</Say></Response>`);
    assert.equal(doc.ignoredAttributes?.length, MAX_IGNORED_PER_DOCUMENT);
  });

  it('KNOWN_ATTRIBUTES is exactly what simu-verbs.xsd declares', () => {
    const xsd = libxmljs.parseXml(readFileSync(new URL('../../verbs/simu-verbs.xsd', import.meta.url), 'utf8'));
    const ns = { xs: 'http://www.w3.org/2001/XMLSchema' };
    const declared = (typeName: string): string[] =>
      xsd
        .find(`//xs:complexType[@name='${typeName}']//xs:attribute/@name`, ns)
        .map((a) => (a as unknown as { value(): string }).value())
        .sort();
    const types: Record<string, string> = {
      Say: 'SayVerb',
      Play: 'PlayVerb',
      Dial: 'DialVerb',
      Number: 'DialNumber',
      Extension: 'DialExtension',
      Record: 'RecordVerb',
      RecordSession: 'RecordSessionVerb',
      Redirect: 'RedirectVerb',
      Pause: 'PauseVerb',
      Hangup: 'HangupVerb',
    };
    for (const [element, type] of Object.entries(types)) {
      assert.deepEqual([...KNOWN_ATTRIBUTES[element]!].sort(), declared(type), element);
    }
    const response = xsd
      .find(`//xs:element[@name='Response']/xs:complexType/xs:attribute/@name`, ns)
      .map((a) => (a as unknown as { value(): string }).value());
    assert.deepEqual([...KNOWN_ATTRIBUTES.Response!], response);
  });

  it('the interpreter reports each (element, attribute) once per call, across documents', async () => {
    const events: VerbEvent[] = [];
    const docs = new Map<string, VerbDocument>([
      ['https://app.example/two', parseVerbDocument('<Response><Say rate="slow">b</Say><Pause x="1"/></Response>')],
    ]);
    const ctx: VerbContext = {
      say: async () => undefined,
      play: async () => 'played',
      dial: async () => ({ status: 'completed', durationSeconds: 0 }),
      record: async () => ({ durationSeconds: 0 }),
      startSessionRecording: async () => undefined,
      pause: async () => undefined,
      gather: async () => ({ digits: '', end: 'timeout' }),
      canReject: () => false,
      reject: async () => undefined,
      hangup: async () => undefined,
      fetchDocument: async (url) => docs.get(url)!,
      setCustomPayload: async () => undefined,
      emit: (e) => events.push(e),
      fallback: { mode: 'drop', value: '' },
    };
    const first = parseVerbDocument(
      '<Response><Say rate="fast">a</Say><Say rate="x">a</Say><Redirect>https://app.example/two</Redirect></Response>',
    );
    const end = await new Interpreter(ctx).run({ document: first });
    assert.equal(end.reason, 'end_of_document');
    assert.deepEqual(events, [
      {
        code: EventCodes.verbAttributeIgnored,
        event: 'verb.attribute_ignored',
        data: { element: 'Say', attribute: 'rate', line: 1 },
      },
      {
        code: EventCodes.verbAttributeIgnored,
        event: 'verb.attribute_ignored',
        data: { element: 'Pause', attribute: 'x', line: 1 },
      },
    ]);
  });
});
