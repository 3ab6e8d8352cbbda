/**
 * Message waiting through the real switch with SIPp as the phone: it subscribes to its own message-summary with
 * its phone token (407, digest), takes the first NOTIFY (active), unsubscribes in the subscription's dialog
 * (Expires: 0) and the last NOTIFY says `terminated;reason=deactivated` (RFC 6665 §4.2.1.4, §4.1.3: `timeout`
 * is for a subscription left to run out). The scenario checks each Subscription-State itself.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { shortPassword } from '../../../sip/index.js';
import {
  startTestSwitch,
  createAccountWithDid,
  runSipp,
  api,
  SCENARIOS,
  allocateSwitchPorts,
} from '../support/harness.js';
import { nextPort } from '../../support/ports.js';
import { eventually } from '../../support/wait.js';

const PORTS = allocateSwitchPorts();

describe('e2e: message-summary unsubscribe (SIPp phone)', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;

  before(async () => {
    ctx = await startTestSwitch(PORTS);
  });
  after(async () => {
    await ctx?.sw.stop();
  });

  it('Expires: 0 in the dialog gets 200 and a last NOTIFY terminated;reason=deactivated', async () => {
    const acct = await createAccountWithDid(ctx.db, '+254711970001');
    const user = await api(ctx.baseUrl, acct.key, 'POST', '/api/users/create', { email: `mwi-${acct.id}@example.com` });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const minted = await api(ctx.baseUrl, acct.key, 'POST', '/api/phone-tokens/mint', { uuid: user.body.uuid });
    assert.equal(minted.status, 200, JSON.stringify(minted.body));
    const ext: string = user.body.extension_number;
    const run = runSipp([
      `127.0.0.1:${PORTS.sip}`,
      ...['-sf', path.join(SCENARIOS, 'phone-mwi-unsubscribe.xml'), '-p', String(nextPort()), '-i', '127.0.0.1'],
      ...['-m', '1', '-timeout', '20s', '-recv_timeout', '5000', '-key', 'domain', acct.id, '-key', 'ext', ext],
      ...['-au', ext, '-ap', shortPassword(minted.body.token)],
    ]);
    assert.equal(await run.exited, 0, run.output());
    await eventually(() => ctx.sw.sip!.mwi.size === 0, 'the subscription is gone');
  });
});
