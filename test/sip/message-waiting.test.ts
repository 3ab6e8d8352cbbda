import assert from 'node:assert/strict';
import { messageSummary } from '../../sip/index.js';

describe('sip: message-summary bodies (RFC 3842 §5.2)', () => {
  it('says yes with new messages, with the new/old counts and the account', () => {
    assert.equal(
      messageSummary({ newMessages: 2, oldMessages: 1 }, 'sip:1002@a.sip.test'),
      'Messages-Waiting: yes\r\nMessage-Account: sip:1002@a.sip.test\r\nVoice-Message: 2/1\r\n',
    );
  });

  it('says no when every message was heard', () => {
    assert.match(
      messageSummary({ newMessages: 0, oldMessages: 3 }, 'sip:1@x'),
      /^Messages-Waiting: no\r\n.*Voice-Message: 0\/3\r\n$/s,
    );
  });
});
