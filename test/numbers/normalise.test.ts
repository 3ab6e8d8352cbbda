import assert from 'node:assert/strict';
import {
  checkTrunkNumberFormat,
  classifyDialled,
  nationalForm,
  normalise,
  numberForTrunk,
  NumberFormatError,
} from '../../numbers/index.js';

const refused = (code: string) => (e: unknown) => e instanceof NumberFormatError && e.code === code;

describe('numbers: normalise to E.164', () => {
  it('reads Kenyan national forms as people write them', () => {
    assert.equal(normalise('0712345678', 'KE'), '+254712345678');
    assert.equal(normalise('0712 345 678', 'KE'), '+254712345678');
    assert.equal(normalise('0712-345-678', 'ke'), '+254712345678');
    assert.equal(normalise('020 1234567', 'KE'), '+254201234567');
    assert.equal(normalise('0110 123456', 'KE'), '+254110123456');
  });

  it('reads international forms: +, 00, the country own prefix (000 in Kenya) and the bare country code', () => {
    assert.equal(normalise('+254712345678', 'KE'), '+254712345678');
    assert.equal(normalise('+254 712 345 678', 'KE'), '+254712345678');
    assert.equal(normalise('00254712345678', 'KE'), '+254712345678');
    assert.equal(normalise('000254712345678', 'KE'), '+254712345678');
    assert.equal(normalise('254712345678', 'KE'), '+254712345678');
    assert.equal(normalise('0044 20 7946 0958', 'KE'), '+442079460958');
    assert.equal(normalise('+44 20 7946 0958', 'KE'), '+442079460958');
  });

  it('reads national forms of the country given, not always Kenya', () => {
    assert.equal(normalise('020 7946 0958', 'GB'), '+442079460958');
    assert.equal(normalise('07400 123456', 'GB'), '+447400123456');
    assert.equal(normalise('0712345678', 'TZ'), '+255712345678');
  });

  it('refuses short codes: they are not subscriber numbers', () => {
    assert.throws(() => normalise('112', 'KE'), refused('NUMBER_SHORT_CODE'));
    assert.throws(() => normalise('100', 'KE'), refused('NUMBER_SHORT_CODE'));
    assert.throws(() => normalise('*144#', 'KE'), refused('NUMBER_CHARACTERS'), 'a USSD code is not a number');
  });

  it('refuses invalid input with a code that says why', () => {
    assert.throws(() => normalise('', 'KE'), refused('NUMBER_EMPTY'));
    assert.throws(() => normalise('   ', 'KE'), refused('NUMBER_EMPTY'));
    assert.throws(() => normalise('07123456789012345678901234567890123', 'KE'), refused('NUMBER_TOO_LONG'));
    assert.throws(() => normalise('07I2345678', 'KE'), refused('NUMBER_CHARACTERS'));
    assert.throws(() => normalise('0712;345678', 'KE'), refused('NUMBER_CHARACTERS'));
    assert.throws(() => normalise('+2547+12345678', 'KE'), refused('NUMBER_CHARACTERS'));
    assert.throws(() => normalise('0712345', 'KE'), refused('NUMBER_INVALID'));
    assert.throws(() => normalise('+99912345678', 'KE'), refused('NUMBER_COUNTRY_CODE'));
    assert.throws(() => normalise('0712345678', 'XX'), refused('NUMBER_UNKNOWN_COUNTRY'));
    assert.throws(() => normalise(undefined as unknown as string, 'KE'), refused('NUMBER_EMPTY'));
  });

  it('gives the national form back for trunks that want it', () => {
    assert.equal(nationalForm('+254712345678'), '0712345678');
    assert.equal(nationalForm('+442079460958'), '02079460958');
  });
});

describe('numbers: what a phone dialled', () => {
  const plan = { country: 'KE', emergencyNumbers: ['1195'] };

  it('takes 112, 999, 911 and the configured numbers for emergency calls, never for extensions', () => {
    for (const n of ['112', '999', '911', '1195'])
      assert.deepEqual(classifyDialled(n, plan), { kind: 'emergency', number: n });
    assert.deepEqual(classifyDialled('1195', { country: 'KE' }), { kind: 'extension', extension: '1195' });
  });

  it('keeps short digit strings as extensions and normalises the rest', () => {
    assert.deepEqual(classifyDialled('1001', plan), { kind: 'extension', extension: '1001' });
    assert.deepEqual(classifyDialled('0712345678', plan), { kind: 'number', e164: '+254712345678' });
    assert.throws(() => classifyDialled('hello', plan), refused('NUMBER_CHARACTERS'));
  });
});

describe('numbers: the form a trunk wants', () => {
  it('sends E.164 by default, the national form, or a tech prefix before the digits', () => {
    assert.equal(numberForTrunk('+254712345678', null), '+254712345678');
    assert.equal(numberForTrunk('+254712345678', 'e164'), '+254712345678');
    assert.equal(numberForTrunk('+254712345678', 'national'), '0712345678');
    assert.equal(numberForTrunk('+254712345678', 'prefix:9#'), '9#254712345678');
    assert.equal(numberForTrunk('112', 'national'), '112', 'an emergency short code goes as dialled');
  });

  it('accepts only the known formats', () => {
    for (const ok of ['e164', 'national', 'prefix:0011', 'prefix:*9#']) checkTrunkNumberFormat(ok);
    for (const bad of ['E164', 'prefix:', 'prefix:abc', 'international'])
      assert.throws(() => checkTrunkNumberFormat(bad), NumberFormatError);
  });
});

describe('numbers: readings kept in memory', () => {
  it('reads the same text the same way again, per country, and a refused text is refused every time', () => {
    for (let i = 0; i < 3; i++) {
      assert.equal(normalise('0712 345 678', 'KE'), '+254712345678');
      assert.equal(normalise('0712 345 678', 'UG'), '+256712345678');
      assert.throws(() => normalise('0712345', 'KE'), NumberFormatError);
    }
  });
});
