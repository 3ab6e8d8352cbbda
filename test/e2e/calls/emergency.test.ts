import assert from 'node:assert/strict';
import { readFileSync, existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SipError } from '../../../sip/stack/index.js';
import { insertRoute, putSetting } from '../../../store/index.js';
import {
  addCarrier,
  allocateSwitchPorts,
  api,
  carrier,
  createAccountWithDid,
  startTestSwitch,
  type TestAccount,
} from '../support/harness.js';
import { TestPhone } from '../support/phone.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import { eventually, waitForBound } from '../../support/wait.js';

const PORTS = allocateSwitchPorts();
const PHONE = nextPorts(2);
const CARRIER = nextPort();
const PSAP = nextPort();
const SINK = nextPort();
const DID = '+254711900112';

/**
 * Issue 17, item 6: an emergency call from a registered phone is never refused: not for a suspended account with
 * no money, a concurrency cap of 0, an allowlist that allows nothing, nor a draining platform. It goes to the
 * `emergency` route (not the first trunk), with the account's DID as caller, and its CDR is flagged.
 */
describe('e2e: emergency calls are never refused', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  let phone: TestPhone;
  const work = mkdtempSync(path.join(os.tmpdir(), 'simu-emergency-'));

  before(async () => {
    // Overload control lets one new call a second through: the emergency call comes right after one that used it.
    ctx = await startTestSwitch({ ...PORTS, env: { SIMU_PLATFORM_MAX_CPS: '1' } });
    acct = await createAccountWithDid(ctx.db, DID, 0);
    const first = await addCarrier(ctx.db, CARRIER, 'a-carrier', ctx.sw, ['127.0.0.2']);
    const psap = await addCarrier(ctx.db, PSAP, 'b-psap', ctx.sw, ['127.0.0.3']);
    await insertRoute(ctx.db, { prefix: '', trunk_id: first.id, priority: 0, weight: 1, buy_rate_cents: 0 });
    await insertRoute(ctx.db, { prefix: 'emergency', trunk_id: psap.id, priority: 0, weight: 1, buy_rate_cents: 0 });
    const user = await api(ctx.baseUrl, acct.key, 'POST', '/api/users/create', { email: 'sos@example.com' });
    const minted = await api(ctx.baseUrl, acct.key, 'POST', '/api/phone-tokens/mint', { uuid: user.body.uuid });
    phone = await new TestPhone(
      user.body.extension_number,
      minted.body.token,
      acct.id,
      PHONE,
      PHONE + 1,
      PORTS.sip,
    ).start();
    assert.equal(await phone.register(), 200);
    // Everything that refuses a call, at once.
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ status: 'suspended', max_concurrent_calls: 0, max_cps: 0 });
    await ctx.db('destination_rules').insert({
      id: 'e2e-allow-only-999',
      account_id: acct.id,
      prefix: '999',
      kind: 'allow',
      created_at: new Date().toISOString(),
    });
    await putSetting(ctx.db, 'draining', 'true');
  });

  after(async () => {
    await phone?.close();
    await ctx?.sw.stop();
  });

  it('a PSTN number from the same phone is refused (suspended, then shed), 112 reaches the emergency route', async () => {
    const log = path.join(work, 'psap.log');
    const psap = carrier({
      port: PSAP,
      sink: SINK,
      scenario: 'uas-answer-hangup.xml',
      extra: ['-d', '1000', '-trace_msg', '-message_file', log],
    });
    await waitForBound(PSAP);
    await assert.rejects(phone.call('0712345678'), (e: unknown) => e instanceof SipError && e.status === 403);
    // The platform's one call this second is used: the next ordinary call is shed, an emergency call is not.
    await assert.rejects(phone.call('0712345678'), (e: unknown) => e instanceof SipError && e.status === 503);
    const dialog = await phone.call('112');
    await new Promise<void>((resolve) => dialog.once('bye', () => resolve()));
    assert.equal(await psap.exited, 0, psap.output());
    const text = existsSync(log) ? readFileSync(log, 'utf8') : '';
    assert.match(text, /^INVITE sip:112@127\.0\.0\.1:\d+ SIP\/2\.0/m, 'the PSAP trunk got the call, as dialled');
    assert.match(text, /^From:[^\r\n]*sip:\+254711900112@/m, "the account's DID is the caller");

    const cdr = await eventually(
      async () => (await ctx.db('calls').where({ account_id: acct.id, to_number: '112' }).first()) ?? undefined,
      'the emergency CDR',
    );
    await eventually(async () => (await ctx.db('calls').where({ id: cdr.id }).first())?.ended_at, 'its end');
    const ended = await ctx.db('calls').where({ id: cdr.id }).first();
    assert.equal(Boolean(ended.emergency), true);
    assert.equal(ended.status, 'completed');
    assert.equal(ended.from_number, DID);
    assert.equal((await ctx.db('wallet_transactions').where({ call_id: cdr.id })).length, 0, 'not billed');
  });
});
