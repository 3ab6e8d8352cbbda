import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DEFAULTS, MAX_LOOP, VerbDocumentError, parseVerbDocument, type DialVerb } from '../../verbs/index.js';

function invalid(xml: string): VerbDocumentError {
  try {
    parseVerbDocument(xml);
  } catch (err) {
    assert.ok(err instanceof VerbDocumentError, `expected VerbDocumentError, got ${String(err)}`);
    assert.equal(err.code, 'VERB_DOCUMENT_INVALID');
    return err;
  }
  assert.fail(`document was accepted: ${xml}`);
}

describe('verbs/parse: valid documents', () => {
  it('every verb with no optional attributes gets its defaults, typed', () => {
    const doc = parseVerbDocument(`<?xml version="1.0" encoding="UTF-8"?>
<Response>
  <Say>Hello</Say>
  <Play>https://media.example.com/a.wav</Play>
  <Dial>+254711000001</Dial>
  <Record/>
  <RecordSession/>
  <Pause/>
  <Redirect>https://app.example.com/next</Redirect>
  <Hangup/>
</Response>`);
    assert.deepEqual(doc.verbs, [
      { verb: 'Say', line: 3, text: 'Hello', loop: 1, untilInterrupted: false },
      {
        verb: 'Play',
        line: 4,
        source: { kind: 'url', url: 'https://media.example.com/a.wav' },
        loop: 1,
        untilInterrupted: false,
      },
      {
        verb: 'Dial',
        line: 5,
        target: { kind: 'number', number: '+254711000001' },
        targets: [{ kind: 'number', number: '+254711000001' }],
        sequential: false,
        method: 'POST',
        timeout: 30,
        timeLimit: 14400,
        record: 'do-not-record',
      },
      {
        verb: 'Record',
        line: 6,
        method: 'POST',
        maxLength: 3600,
        timeout: 5,
        finishOnKey: '1234567890*#',
        playBeep: true,
      },
      { verb: 'RecordSession', line: 7, channels: 'dual' },
      { verb: 'Pause', line: 8, length: 1 },
      { verb: 'Redirect', line: 9, url: 'https://app.example.com/next', method: 'POST' },
      { verb: 'Hangup', line: 10 },
    ]);
  });

  it('explicit attributes are converted to numbers and booleans', () => {
    const doc = parseVerbDocument(`<Response>
<Say voice="Polly.Joanna" language="en-GB" loop="3">Karibu</Say>
<Play asset="welcome-tone" loop="2"/>
<Dial action="https://app.example.com/dial?step=2" method="POST" timeout="45" callerId="+254700000001"
      timeLimit="600" record="record-from-answer-dual"><Extension>1001</Extension></Dial>
<Dial><Number> +254711000002 </Number></Dial>
<Record action="http://app.example.com/rec" maxLength="60" timeout="0" finishOnKey="#" playBeep="false"/>
<RecordSession channels="mono" maxLength="120"/>
<Pause length="0"/>
</Response>`);
    assert.deepEqual(doc.verbs, [
      {
        verb: 'Say',
        line: 2,
        text: 'Karibu',
        voice: 'Polly.Joanna',
        language: 'en-GB',
        loop: 3,
        untilInterrupted: false,
      },
      { verb: 'Play', line: 3, source: { kind: 'asset', name: 'welcome-tone' }, loop: 2, untilInterrupted: false },
      {
        verb: 'Dial',
        // libxml numbers an element by the line where its start tag ends.
        line: 5,
        target: { kind: 'extension', extension: '1001' },
        targets: [{ kind: 'extension', extension: '1001' }],
        sequential: false,
        action: 'https://app.example.com/dial?step=2',
        method: 'POST',
        timeout: 45,
        callerId: '+254700000001',
        timeLimit: 600,
        record: 'record-from-answer-dual',
      },
      {
        verb: 'Dial',
        line: 6,
        target: { kind: 'number', number: '+254711000002' },
        targets: [{ kind: 'number', number: '+254711000002' }],
        sequential: false,
        method: 'POST',
        timeout: 30,
        timeLimit: 14400,
        record: 'do-not-record',
      },
      {
        verb: 'Record',
        line: 7,
        action: 'http://app.example.com/rec',
        method: 'POST',
        maxLength: 60,
        timeout: 0,
        finishOnKey: '#',
        playBeep: false,
      },
      { verb: 'RecordSession', line: 8, channels: 'mono', maxLength: 120 },
      { verb: 'Pause', line: 9, length: 0 },
    ]);
  });

  it('loop="0" means until interrupted, capped at MAX_LOOP', () => {
    const [say, play] = parseVerbDocument(
      '<Response><Say loop="0">menu</Say><Play loop="0">https://a.example/x.wav</Play></Response>',
    ).verbs;
    assert.deepEqual(
      [say, play].map((v) => v !== undefined && 'loop' in v && [v.loop, v.untilInterrupted]),
      [
        [MAX_LOOP, true],
        [MAX_LOOP, true],
      ],
    );
  });

  it('an empty Response, comments, CDATA and a Redirect URL on its own indented line are accepted', () => {
    assert.deepEqual(parseVerbDocument('<Response/>').verbs, []);
    const doc = parseVerbDocument(`<Response><!-- hi --><Say><![CDATA[1 < 2 & "quotes"]]></Say>
  <Redirect>
      https://app.example.com/a?b=1&amp;c=2
  </Redirect></Response>`);
    assert.deepEqual(
      doc.verbs.map((v) => (v.verb === 'Say' ? v.text : v.verb === 'Redirect' ? v.url : '')),
      ['1 < 2 & "quotes"', 'https://app.example.com/a?b=1&c=2'],
    );
  });

  it('Response customPayload is parsed into an object', () => {
    const doc = parseVerbDocument(`<Response customPayload='{"ticket":42,"tags":["vip"]}'><Hangup/></Response>`);
    assert.deepEqual(doc.customPayload, { ticket: 42, tags: ['vip'] });
    assert.ok(!('customPayload' in parseVerbDocument('<Response/>')));
  });

  it('the XSD defaults and the typed DEFAULTS agree', () => {
    const xsd = readFileSync(new URL('../../verbs/simu-verbs.xsd', import.meta.url), 'utf8');
    for (const [verb, defaults] of Object.entries(DEFAULTS) as Array<[string, Record<string, unknown>]>) {
      const block = new RegExp(`<xs:complexType name="${verb}Verb"[\\s\\S]*?</xs:complexType>`).exec(xsd)?.[0];
      assert.ok(block, `no ${verb}Verb type in the XSD`);
      for (const [name, value] of Object.entries(defaults)) {
        const declared: string | undefined = new RegExp(`name="${name}"[^>]*default="([^"]*)"`).exec(block)?.[1];
        assert.equal(declared, String(value), `${verb}@${name}`);
      }
    }
  });
});

describe('verbs/parse: invalid documents name the line and the problem', () => {
  const cases: Array<[string, string, number | undefined, RegExp]> = [
    [
      'unknown verb',
      '<Response>\n<Pay/>\n</Response>',
      2,
      /Element 'Pay': This element is not expected. Expected is one of \( Say, Play, Dial/,
    ],
    ['verb names are case-sensitive', '<Response><say>hi</say></Response>', 1, /Element 'say'/],
    [
      'a known attribute with a bad value (unknown ones are ignored: test/verbs/ignored-attributes.test.ts)',
      '<Response>\n\n<Say foo="1" loop="x">hi</Say></Response>',
      3,
      /Element 'Say', attribute 'loop'/,
    ],
    ['wrong root', '<Reply><Say>hi</Say></Reply>', 1, /root element must be <Response>/],
    ['a verb as root', '<Say>hi</Say>', 1, /root element must be <Response>/],
    ['namespaced root', '<Response xmlns="urn:x"/>', 1, /root element must be <Response> with no namespace/],
    ['not well-formed', '<Response>\n<Say>hi</Response>', 2, /not well-formed XML/],
    ['empty text', '   ', undefined, /empty/],
    ['Say without text', '<Response><Say>  </Say></Response>', 1, /Say has no text/],
    [
      'Say loop too large',
      '<Response><Say loop="1001">x</Say></Response>',
      1,
      /attribute 'loop'.*expected an integer from 0 to 1000/,
    ],
    [
      'Say loop not a number',
      '<Response><Say loop="many">x</Say></Response>',
      1,
      /'many'.*expected an integer from 0 to 1000/,
    ],
    [
      'Play with URL and asset',
      '<Response><Play asset="a">https://x.example/a.wav</Play></Response>',
      1,
      /Play has both a URL and an asset/,
    ],
    ['Play with neither', '<Response><Play/></Response>', 1, /Play needs a URL as its text or an asset attribute/],
    ['Play relative URL', '<Response><Play>/a.wav</Play></Response>', 1, /Play URL '\/a.wav' is not an absolute URL/],
    ['Play ftp URL', '<Response><Play>ftp://x.example/a.wav</Play></Response>', 1, /uses ftp; only http and https/],
    ['Play bad asset name', '<Response><Play asset="a b"/></Response>', 1, /attribute 'asset'.*expected an asset name/],
    [
      'customPayload not JSON',
      `<Response customPayload='{ticket:42}'/>`,
      1,
      /Response customPayload is not valid JSON/,
    ],
    ['customPayload not an object', `<Response customPayload='[1,2]'/>`, 1, /customPayload must be a JSON object/],
    [
      'markup inside Play',
      '<Response><Play>https://a.example/x.wav<break time="1s"/></Play></Response>',
      1,
      /<Play> takes text only, no child elements/,
    ],
    ['Say of SSML with no words', '<Response><Say><break time="1s"/></Say></Response>', 1, /Say has no text/],
    ['Dial without target', '<Response><Dial/></Response>', 1, /Dial has no target/],
    [
      'Dial text not a phone number (national forms are read when dialled: numbers/)',
      '<Response><Dial>call-0711000000</Dial></Response>',
      1,
      /Dial text 'call-0711000000' is not a phone number/,
    ],
    [
      'Dial text and child',
      '<Response><Dial>+254711000000<Number>+254711000001</Number></Dial></Response>',
      1,
      /Dial has both text/,
    ],
    [
      'Dial eleven Numbers (at most 10 ring at once)',
      `<Response><Dial>${'<Number>+254711000000</Number>'.repeat(11)}</Dial></Response>`,
      1,
      /Element 'Number': This element is not expected/,
    ],
    [
      'Dial Number not a phone number',
      '<Response><Dial><Number>#0711</Number></Dial></Response>',
      1,
      /Element 'Number'.*expected a phone number/,
    ],
    [
      'Dial Client hints Extension',
      '<Response><Dial><Client>alice</Client></Dial></Response>',
      1,
      /Element 'Client'.*<Extension>/,
    ],
    [
      'Dial timeout 0',
      '<Response><Dial timeout="0">+254711000000</Dial></Response>',
      1,
      /attribute 'timeout'.*from 1 to 600/,
    ],
    [
      'Dial callerId not E.164',
      '<Response><Dial callerId="Alice">+254711000000</Dial></Response>',
      1,
      /attribute 'callerId'.*E.164/,
    ],
    [
      'Dial record unknown',
      '<Response><Dial record="yes">+254711000000</Dial></Response>',
      1,
      /attribute 'record'.*do-not-record/,
    ],
    [
      'Dial relative action',
      '<Response><Dial action="/next">+254711000000</Dial></Response>',
      1,
      /Dial action '\/next' is not an absolute URL/,
    ],
    [
      'method GET refused',
      '<Response><Redirect method="GET">https://a.example/</Redirect></Response>',
      1,
      /attribute 'method'.*expected POST/,
    ],
    ['Record maxLength 0', '<Response><Record maxLength="0"/></Response>', 1, /attribute 'maxLength'.*from 1 to 86400/],
    [
      'Record playBeep not boolean',
      '<Response><Record playBeep="yes"/></Response>',
      1,
      /attribute 'playBeep'.*true or false/,
    ],
    [
      'Record finishOnKey bad key',
      '<Response><Record finishOnKey="a"/></Response>',
      1,
      /attribute 'finishOnKey'.*0-9 \* #/,
    ],
    ['Record with text', '<Response><Record>hello</Record></Response>', 1, /Element 'Record': Character content/],
    [
      'RecordSession channels',
      '<Response><RecordSession channels="stereo"/></Response>',
      1,
      /attribute 'channels'.*mono or dual/,
    ],
    ['Redirect without URL', '<Response><Redirect/></Response>', 1, /Redirect has no URL/],
    [
      'Redirect javascript URL',
      '<Response><Redirect>javascript:alert(1)</Redirect></Response>',
      1,
      /uses javascript; only http and https/,
    ],
    ['Pause negative', '<Response><Pause length="-1"/></Response>', 1, /attribute 'length'.*from 0 to 3600/],
    [
      'Hangup with child',
      '<Response><Hangup><Say>x</Say></Hangup></Response>',
      1,
      /Element 'Hangup': Element content is not allowed/,
    ],
  ];
  for (const [name, xml, line, pattern] of cases) {
    it(name, () => {
      const err = invalid(xml);
      assert.match(err.message, pattern);
      assert.equal(err.line, line);
      if (line !== undefined) assert.match(err.message, new RegExp(`line ${line}:`));
    });
  }

  it('Dial with several nouns keeps them in order, and sequential="true" (beyond the spec) is read', () => {
    const doc = parseVerbDocument(
      '<Response><Dial sequential="true" timeout="5"><Number>+254711000000</Number><Extension>1001</Extension>' +
        '<Number>0711 000 002</Number></Dial><Dial><Number>+254711000003</Number><Number>+254711000004</Number></Dial></Response>',
    );
    const [first, second] = doc.verbs as DialVerb[];
    assert.deepEqual(first!.targets, [
      { kind: 'number', number: '+254711000000' },
      { kind: 'extension', extension: '1001' },
      { kind: 'number', number: '0711 000 002' },
    ]);
    assert.deepEqual(first!.target, first!.targets[0]);
    assert.equal(first!.sequential, true);
    assert.equal(second!.targets.length, 2);
    assert.equal(second!.sequential, false);
  });

  it('every problem in the document is reported, not only the first', () => {
    const err = invalid('<Response>\n<Say loop="a">x</Say>\n<Pause length="b"/>\n</Response>');
    assert.equal(err.problems.length, 2);
    assert.match(err.problems[0]!, /^line 2: .*'a'/);
    assert.match(err.problems[1]!, /^line 3: .*'b'/);
  });

  it('a document over 64 KiB is refused before parsing', () => {
    const big = `<Response>${'<Pause/>'.repeat(9000)}</Response>`;
    assert.match(invalid(big).message, /bytes; the limit is 65536/);
  });

  it('the size limit counts UTF-8 bytes, not characters', () => {
    const say = `<Say>${'é'.repeat(3000)}</Say>`; // 6000 bytes, 3000 chars each
    assert.doesNotThrow(() => parseVerbDocument(`<Response>${say.repeat(10)}</Response>`)); // 60 KB
    assert.match(invalid(`<Response>${say.repeat(11)}</Response>`).message, /limit is 65536/);
  });
});
