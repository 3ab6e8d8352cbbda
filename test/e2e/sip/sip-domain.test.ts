/**
 * Issue 19 item 6: an account's readable SIP domain. SIPp phones set up exactly as docs/softphones.md says (the
 * domain, the extension, the phone token's short form as password, the switch as outbound proxy) register and call
 * each other on the first try, with the label domain (`acme-….sip.example.net`) and with a bare account uuid that
 * begins with a digit (refused as a host before: RFC 3261's toplabel begins with a letter).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { setAccountSipLabel } from '../../../store/index.js';
import { shortPassword } from '../../../sip/index.js';
import { SipError } from '../../../sip/stack/index.js';
import { TestPhone } from '../support/phone.js';
import {
  startTestSwitch,
  createAccountWithDid,
  runSipp,
  carrier,
  api,
  SCENARIOS,
  allocateSwitchPorts,
  type TestAccount,
} from '../support/harness.js';
import { nextPort } from '../../support/ports.js';
import { eventually, waitForBound } from '../../support/wait.js';

const PORTS = allocateSwitchPorts();
/** The registrar tests' REGISTER with a phone token as digest password (keys domain, ext; -au, -ap). */
const REGISTER = path.join(import.meta.dirname, '..', '..', 'sip', 'registrar-scenarios', 'register-digest.xml');

/** How many `status` responses SIPp's scenario screen counts (over every line that receives one). */
function received(output: string, status: number): number {
  const screen = output.slice(output.lastIndexOf('Scenario Screen'));
  let n = 0;
  for (const m of screen.matchAll(new RegExp(`^\\s*${status} <-+\\s+(\\d+)`, 'gm'))) n += Number(m[1]);
  return n;
}

describe('e2e: readable SIP domains', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;

  before(async () => {
    ctx = await startTestSwitch({ ...PORTS, env: { SIMU_SIP_DOMAIN: 'sip.example.net' } });
  });
  after(async () => {
    await ctx?.sw.stop();
  });

  /** An end-user and its phone token's short form, through the REST API as a customer would. */
  async function endUser(a: TestAccount, n: number): Promise<{ ext: string; password: string; id: string }> {
    const user = await api(ctx.baseUrl, a.key, 'POST', '/api/users/create', { email: `u${n}-${a.id}@example.com` });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const minted = await api(ctx.baseUrl, a.key, 'POST', '/api/phone-tokens/mint', { uuid: user.body.uuid });
    assert.equal(minted.status, 200, JSON.stringify(minted.body));
    return { ext: user.body.extension_number, password: shortPassword(minted.body.token), id: user.body.uuid };
  }

  /** Phone 1 registers and waits for a call; phone 2 calls it; both through `domain`. */
  async function registerAndCall(a: TestAccount, domain: string): Promise<void> {
    const callee = await endUser(a, 1);
    const caller = await endUser(a, 2);
    const sip = `127.0.0.1:${PORTS.sip}`;
    const common = [
      '-i',
      '127.0.0.1',
      '-m',
      '1',
      '-timeout',
      '30s',
      '-recv_timeout',
      '10000',
      '-key',
      'domain',
      domain,
    ];
    // SIPp cannot register and then take a call with another Call-ID in one scenario: the phone registers from
    // its port, then a second SIPp answers on that same port (the binding outlives the first process).
    const phonePort = nextPort();
    const registering = runSipp([
      sip,
      '-sf',
      REGISTER,
      '-p',
      String(phonePort),
      ...common,
      ...['-key', 'ext', callee.ext, '-au', callee.ext, '-ap', callee.password],
    ]);
    assert.equal(await registering.exited, 0, registering.output());
    assert.equal(received(registering.output(), 200), 1, registering.output());
    await eventually(async () => {
      const list = (await api(ctx.baseUrl, a.key, 'GET', '/api/users')).body as Array<Record<string, unknown>>;
      return list.find((x) => x.uuid === callee.id)?.registration_state === 'registered';
    }, `the callee registered (${domain})`);
    const answering = carrier({ port: phonePort, sink: nextPort() });
    try {
      await waitForBound(phonePort);
      const calling = runSipp([
        sip,
        '-sf',
        path.join(SCENARIOS, 'phone-call-extension.xml'),
        '-p',
        String(nextPort()),
        ...common,
        ...['-key', 'ext', caller.ext, '-key', 'callee', callee.ext, '-au', caller.ext, '-ap', caller.password],
        ...(process.env.DEBUG_SIPP ? ['-trace_msg', '-message_file', '/tmp/d/call.log'] : []),
      ]);
      assert.equal(await calling.exited, 0, calling.output());
      assert.equal(await answering.exited, 0, answering.output());
    } finally {
      answering.kill();
    }
    const call = await eventually(async () => {
      const c = (await api(ctx.baseUrl, a.key, 'GET', '/api/calls/?limit=1')).body.calls[0];
      return c?.status === 'completed' ? c : undefined;
    }, 'the call completed');
    assert.equal(call.direction, 'internal');
    assert.deepEqual([call.from_number, call.to_number], [caller.ext, callee.ext]);
  }

  it('the account label under sip.domain: shown by GET /api/account; a phone registers and takes a call', async () => {
    const a = await createAccountWithDid(ctx.db, '+254711900001');
    await setAccountSipLabel(ctx.db, a.id, 'acme-e2e');
    const shown = await api(ctx.baseUrl, a.key, 'GET', '/api/account');
    assert.equal(shown.body.sip_domain, 'acme-e2e.sip.example.net');
    await registerAndCall(a, shown.body.sip_domain);
  });

  it('a bare account uuid beginning with a digit works as the domain too', async () => {
    // About 10 account uuids in 16 begin with a digit; make one.
    let a: TestAccount | undefined;
    for (let i = 0; i < 50 && !a; i++) {
      const made = await createAccountWithDid(ctx.db, `+2547119100${String(i).padStart(2, '0')}`);
      if (/^\d/.test(made.id)) a = made;
    }
    assert.ok(a, 'no account uuid began with a digit in 50 tries');
    await registerAndCall(a, a.id);
  });

  it('an unknown label is an unknown account: the same 401 as a wrong password, never a registration', async () => {
    const a = await createAccountWithDid(ctx.db, '+254711920001');
    const u = await endUser(a, 1);
    const run = runSipp([
      `127.0.0.1:${PORTS.sip}`,
      '-sf',
      REGISTER,
      '-p',
      String(nextPort()),
      '-i',
      '127.0.0.1',
      '-m',
      '1',
      '-timeout',
      '5s',
      '-recv_timeout',
      '3000',
      '-key',
      'domain',
      'nobody-here.sip.example.net',
      '-key',
      'ext',
      u.ext,
      '-au',
      u.ext,
      '-ap',
      u.password,
    ]);
    assert.equal(await run.exited, 0, run.output());
    assert.equal(received(run.output(), 200), 0, run.output());
    assert.equal(received(run.output(), 401), 2, run.output());
    const list = (await api(ctx.baseUrl, a.key, 'GET', '/api/users')).body as Array<Record<string, unknown>>;
    assert.equal(list.find((x) => x.uuid === u.id)?.registration_state, 'unregistered');
  });

  it("a phone calling an extension at another account's label: 403 and END.0488, as with its uuid", async () => {
    const a = await createAccountWithDid(ctx.db, '+254711930001');
    const b = await createAccountWithDid(ctx.db, '+254711930002');
    await setAccountSipLabel(ctx.db, b.id, 'other-shop');
    const u = await endUser(a, 1);
    const token = (await api(ctx.baseUrl, a.key, 'POST', '/api/phone-tokens/mint', { uuid: u.id })).body.token;
    const phone = await new TestPhone(u.ext, token, a.id, nextPort(), nextPort(), PORTS.sip).start();
    try {
      await assert.rejects(
        phone.ua.createUAC('sip:1001@other-shop.sip.example.net', {
          localSdp: phone.sdp,
          from: `<sip:${u.ext}@${phone.domain}>`,
          proxy: phone.proxy,
          headers: { Authorization: `Bearer ${token}` },
        }),
        (e: unknown) => e instanceof SipError && e.status === 403,
      );
      const call = (await api(ctx.baseUrl, a.key, 'GET', '/api/calls/?limit=1')).body.calls[0];
      assert.equal(call?.reason_code, 'END.0488');
    } finally {
      await phone.close();
    }
  });
});
