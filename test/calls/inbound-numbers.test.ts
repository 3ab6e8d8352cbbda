import assert from 'node:assert/strict';
import { callerFromRequest, didFromRequest } from '../../calls/flows/inbound.js';
import type { SipRequest } from '../../sip/stack/index.js';

const invite = (user: string, from: string) =>
  ({ uri: { user }, headers: new Map([['from', from]]) }) as unknown as SipRequest;

/** Issue 17, item 5: carriers send DIDs and callers in national and international forms; both are read as E.164. */
describe('calls/inbound: numbers a carrier sends', () => {
  it('reads the DID in every form a carrier sends it', () => {
    for (const user of ['+254711900001', '254711900001', '00254711900001', '0711900001', '%2B254711900001'])
      assert.equal(didFromRequest(invite(user, ''), 'KE'), '+254711900001', user);
  });

  it('reads the caller as E.164 when it is a number, and keeps anything else as sent', () => {
    assert.equal(callerFromRequest(invite('x', '<sip:0722000001@carrier.example>;tag=1'), 'KE'), '+254722000001');
    assert.equal(callerFromRequest(invite('x', '<sip:+447400123456@carrier.example>'), 'KE'), '+447400123456');
    assert.equal(callerFromRequest(invite('x', '"Reception" <sip:reception@pbx.example>'), 'KE'), 'reception');
    assert.equal(callerFromRequest(invite('x', '<sip:anonymous@anonymous.invalid>'), 'KE'), 'anonymous');
    assert.equal(callerFromRequest(invite('x', ''), 'KE'), 'anonymous');
  });

  it('a DID that is no number keeps the old reading, which matches no DID', () => {
    assert.equal(didFromRequest(invite('12', ''), 'KE'), '+12');
  });
});
