import assert from 'node:assert/strict';
import {
  EspeakTtsEngine,
  NOTICES,
  NOTICE_LANGUAGES,
  englishNumber,
  notice,
  readWav,
  spokenAmount,
  swahiliNumber,
  type NoticeArgs,
  type NoticeKey,
} from '../../media/index.js';
import { parseVerbDocument } from '../../verbs/index.js';
import { speechSecondsOf } from '../e2e/support/harness.js';
import { tempDir } from './helpers.js';

/** Arguments that make every sentence of the table concrete. */
const SAMPLE: NoticeArgs = { seconds: 60, cents: 120050, fresh: 2, saved: 1, count: 3, key: '7', keepKey: '9' };

describe('media: the notices the switch speaks, in English and Swahili (issue 23, item 3)', function () {
  this.timeout(120_000);

  it('says numbers as Swahili speakers say them', () => {
    const cases: Array<[number, string]> = [
      [1, 'moja'],
      [11, 'kumi na moja'],
      [25, 'ishirini na tano'],
      [50, 'hamsini'],
      [100, 'mia moja'],
      [105, 'mia moja na tano'],
      [150, 'mia moja na hamsini'],
      [125, 'mia moja ishirini na tano'],
      [1200, 'elfu moja mia mbili'],
      [2005, 'elfu mbili na tano'],
      [25_000, 'elfu ishirini na tano'],
      [120_000, 'laki moja elfu ishirini'],
      [1_000_000, 'milioni moja'],
      [0, 'sifuri'],
    ];
    for (const [n, words] of cases) assert.equal(swahiliNumber(n), words, String(n));
    assert.equal(englishNumber(1200), 'one thousand two hundred');
    assert.equal(englishNumber(105), 'one hundred and five');
    assert.equal(englishNumber(2042), 'two thousand and forty-two');
  });

  it('says amounts of KES in both languages', () => {
    assert.equal(spokenAmount(120050, 'sw'), 'shilingi elfu moja mia mbili na senti hamsini');
    assert.equal(spokenAmount(120050, 'en'), 'one thousand two hundred shillings and fifty cents');
    assert.equal(spokenAmount(100, 'en'), 'one shilling');
    assert.equal(spokenAmount(0, 'sw'), 'shilingi sifuri');
    assert.equal(spokenAmount(5, 'sw'), 'senti tano');
    assert.equal(
      notice('balance', 'sw', { cents: 120050 }).text,
      'Salio lako ni shilingi elfu moja mia mbili na senti hamsini.',
    );
    assert.equal(notice('creditWarning', 'sw', { seconds: 60 }).text, 'Imebaki dakika moja ya mazungumzo.');
    assert.equal(notice('creditWarning', 'sw', { seconds: 30 }).text, 'Zimebaki sekunde thelathini za mazungumzo.');
    assert.equal(notice('creditWarning', 'en', { seconds: 60 }).text, 'One minute of talk time left.');
  });

  it('every notice has an English and a Swahili sentence, and they differ', () => {
    for (const key of Object.keys(NOTICES) as NoticeKey[]) {
      const en = notice(key, 'en', SAMPLE).text;
      const sw = notice(key, 'sw', SAMPLE).text;
      assert.ok(en.length > 5 && sw.length > 5, key);
      assert.notEqual(en, sw, key);
      assert.doesNotMatch(sw, /undefined|NaN/, key);
    }
  });

  it("each sentence is spoken with its language's espeak-ng voice (sw for Swahili) and each file holds speech", async () => {
    const data = tempDir('notices');
    try {
      const tts = new EspeakTtsEngine({ cacheDir: `${data.dir}/tts` });
      for (const key of Object.keys(NOTICES) as NoticeKey[]) {
        for (const lang of NOTICE_LANGUAGES) {
          const n = notice(key, lang, SAMPLE);
          const r = await tts.synthesize({ text: n.text, language: n.language });
          assert.equal(r.engineVoice, lang === 'sw' ? 'sw' : 'en-us', `${key}/${lang}`);
          const speech = speechSecondsOf((await readWav(r.path)).samples);
          assert.ok(speech >= 0.5, `${key}/${lang}: ${speech.toFixed(2)} s of speech in ${r.path}`);
        }
      }
      // The voice is what makes it Swahili: the same words in the English voice are other audio.
      const text = notice('balance', 'sw', SAMPLE).text;
      const sw = await tts.synthesize({ text, language: 'sw' });
      const en = await tts.synthesize({ text, language: 'en-us' });
      assert.notDeepEqual((await readWav(sw.path)).samples, (await readWav(en.path)).samples);
    } finally {
      data.remove();
    }
  });

  it('<Say language="sw-KE"> is a valid document and selects the Swahili voice', async () => {
    const doc = parseVerbDocument('<Response><Say language="sw-KE">Karibu Simu.</Say></Response>');
    assert.equal((doc.verbs[0] as { language?: string }).language, 'sw-KE');
    const data = tempDir('sw-ke');
    try {
      const tts = new EspeakTtsEngine({ cacheDir: `${data.dir}/tts` });
      assert.equal((await tts.resolveVoice('sw-KE', undefined)).engineVoice, 'sw');
      assert.equal((await tts.synthesize({ text: 'Karibu Simu.', language: 'sw-KE' })).engineVoice, 'sw');
    } finally {
      data.remove();
    }
  });
});
