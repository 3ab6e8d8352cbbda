import assert from 'node:assert/strict';
import { MAX_SAY_CHARS, parseVerbDocument, type GatherVerb, type SayVerb } from '../../verbs/index.js';
import { MAX_SAY_SSML_CHARS } from '../../verbs/ssml.js';
import { MAX_TTS_SSML, MAX_TTS_TEXT, SSML_ELEMENTS } from '../../media/index.js';

const sayOf = (inner: string, attrs = ''): SayVerb => {
  const doc = parseVerbDocument(`<Response><Say${attrs}>${inner}</Say></Response>`);
  return doc.verbs[0] as SayVerb;
};

describe('verbs/ssml: SSML inside Say, rebuilt for espeak-ng', () => {
  it('what the twilio library writes runs: break, emphasis, prosody, say-as, p, s, sub, lang, w, phoneme', () => {
    const say = sayOf(
      'Hello<break time="200ms"/><emphasis level="strong">world</emphasis><prosody rate="slow" pitch="+10%">slowly' +
        '</prosody><say-as interpret-as="characters">abc</say-as><p>para</p><s>sent</s><sub alias="World Wide Web">' +
        'WWW</sub><lang xml:lang="fr-FR">bonjour</lang><w role="amazon:VB">read</w>' +
        '<phoneme alphabet="ipa" ph="pɪˈkɑːn">pecan</phoneme>',
      ' voice="Polly.Joanna" loop="2"',
    );
    assert.equal(say.text, 'Hello world slowly abc para sent WWW bonjour read pecan');
    assert.equal(
      say.ssml,
      '<speak>Hello<break time="200ms"/><emphasis level="strong">world</emphasis>' +
        '<prosody rate="slow" pitch="+10%">slowly</prosody><say-as interpret-as="characters">abc</say-as>' +
        '<p>para</p><s>sent</s> World Wide Web <voice xml:lang="fr-FR">bonjour</voice> read  pecan</speak>',
    );
    assert.equal(say.voice, 'Polly.Joanna');
    assert.equal(say.loop, 2);
  });

  it('a Say of text alone has no ssml; its SSML attributes are not reported as unknown attributes', () => {
    assert.equal(sayOf('Hello').ssml, undefined);
    const doc = parseVerbDocument(
      '<Response><Say>a<break time="1s"/><prosody rate="x-slow">b</prosody></Say></Response>',
    );
    assert.equal(doc.ignoredAttributes, undefined);
  });

  it('elements espeak-ng must not obey give their text; bad attribute values are dropped; text is escaped', () => {
    const say = sayOf(
      '<audio src="/etc/passwd">x &amp; y</audio><voice name="evil">v</voice><break time="1; rm -rf"/>' +
        '<prosody rate="&quot;/&gt;&lt;audio src=&quot;a">q</prosody><emphasis level="loud">e &lt;tag&gt;</emphasis>' +
        '<lang xml:lang="../../x">l</lang><speak>s</speak>',
    );
    assert.equal(
      say.ssml,
      '<speak>x &amp; y  v <break/><prosody>q</prosody><emphasis>e &lt;tag&gt;</emphasis> l  s</speak>',
    );
    for (const m of say.ssml!.matchAll(/<\/?([^\s/>]+)/g)) assert.ok(SSML_ELEMENTS.has(m[1]!), m[1]);
  });

  it('Gather and a queue wait document carry the SSML of their Say prompts', () => {
    const doc = parseVerbDocument('<Response><Gather><Say>Press <emphasis>one</emphasis></Say></Gather></Response>');
    const gather = doc.verbs[0] as GatherVerb;
    assert.equal((gather.prompts[0] as SayVerb).ssml, '<speak>Press <emphasis>one</emphasis></speak>');
  });

  it('markup is bounded: a Say whose SSML passes the limit is refused, naming it', () => {
    const inner = '<break time="1ms"/>'.repeat(1200) + 'x';
    assert.throws(() => sayOf(inner), /Say SSML is \d+ characters as spoken; the limit is 16384/);
  });

  it('the parser and the TTS engine agree on the limits', () => {
    assert.equal(MAX_SAY_CHARS, MAX_TTS_TEXT);
    assert.equal(MAX_SAY_SSML_CHARS, MAX_TTS_SSML);
  });
});
