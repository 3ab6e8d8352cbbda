import assert from 'node:assert/strict';
import { fallbackPolicyOf } from '../../calls/prepaid/fallback-message.js';

/** Issue 23, item 3: the fallback `message` speaks the account's language; with no text, the switch's notice. */
describe('calls: the fallback message in the account’s language', () => {
  it('an empty message is the default notice, in Swahili for a Swahili account, English otherwise', () => {
    assert.deepEqual(fallbackPolicyOf({ fallback_mode: 'message', fallback_value: ' ', language: 'sw' }), {
      mode: 'message',
      value: 'Samahani, simu hii haiwezi kukamilika kwa sasa. Tafadhali jaribu tena baadaye.',
      language: 'sw',
    });
    const en = fallbackPolicyOf({ fallback_mode: 'message', fallback_value: '', language: 'en' });
    assert.equal(en.value, 'We are sorry, this call cannot be completed right now. Please try again later.');
    assert.equal(en.language, 'en-us');
  });

  it("the account's own text is kept, spoken with its language's voice; play and drop are as they were", () => {
    assert.deepEqual(fallbackPolicyOf({ fallback_mode: 'message', fallback_value: 'Tumefunga.', language: 'sw' }), {
      mode: 'message',
      value: 'Tumefunga.',
      language: 'sw',
    });
    assert.deepEqual(fallbackPolicyOf({ fallback_mode: 'play', fallback_value: 'https://a/b.wav', language: 'sw' }), {
      mode: 'play',
      value: 'https://a/b.wav',
    });
    assert.deepEqual(fallbackPolicyOf({ fallback_mode: 'drop', fallback_value: '', language: 'en' }), {
      mode: 'drop',
      value: '',
    });
  });
});
