import assert from 'node:assert/strict';
import { createPolicy, frontPolicyData, setFrontCap } from '../../sip/front-policy.js';

/** The platform's policy the UDP front's worker loads (sip/front-policy.js): emergency numbers and the cap. */
describe('sip/front-policy: the UDP front policy', () => {
  it('never refuses an emergency number, separators ignored', () => {
    const policy = createPolicy(frontPolicyData(['112', '999']));
    assert.equal(policy.exempt('112'), true);
    assert.equal(policy.exempt('9-9 9'), true);
    assert.equal(policy.exempt('254711000001'), false);
  });

  it('holds the platform cap over the last second; 0 is no cap', () => {
    const data = frontPolicyData([]);
    const policy = createPolicy(data);
    for (let i = 0; i < 5; i++) {
      assert.equal(policy.admit(i), true, 'no cap yet');
      policy.admitted(i);
    }
    setFrontCap(data, 2);
    assert.equal(policy.admit(10), true);
    policy.admitted(10);
    assert.equal(policy.admit(20), true);
    policy.admitted(20);
    assert.equal(policy.admit(30), false, 'a third call within the second is over the cap');
    assert.equal(policy.admit(1011), true, 'a second later the first admission has left the window');
  });
});
