/**
 * The digest-uri a phone signs (RFC 3261 §22.4) with the switch listening on every address (sip.host 0.0.0.0):
 * SIPp's default, `sip:<the address it sent to>:<port>`, names this switch and is accepted, for REGISTER and for
 * INVITE; so is the switch's SIP domain; a digest-uri naming another server is a failed credential (403 with the
 * reason in a Warning), never 400. Loopback only: the switch binds 0.0.0.0, the peers use 127.0.0.1.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { shortPassword } from '../../../sip/index.js';
import {
  startTestSwitch,
  createAccountWithDid,
  runSipp,
  carrier,
  api,
  SCENARIOS,
  allocateSwitchPorts,
} from '../support/harness.js';
import type { TestAccount } from '../support/harness.js';
import { nextPort } from '../../support/ports.js';
import { eventually, waitForBound } from '../../support/wait.js';

const PORTS = allocateSwitchPorts();
const REGISTER = path.join(import.meta.dirname, '..', '..', 'sip', 'registrar-scenarios', 'register-digest.xml');

/** How many `status` responses SIPp's scenario screen counts (over every line that receives one). */
function received(output: string, status: number): number {
  const screen = output.slice(output.lastIndexOf('Scenario Screen'));
  let n = 0;
  for (const m of screen.matchAll(new RegExp(`^\\s*${status} <-+\\s+(\\d+)`, 'gm'))) n += Number(m[1]);
  return n;
}

describe('e2e: digest-uri with the switch on 0.0.0.0', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  let n = 0;

  before(async () => {
    ctx = await startTestSwitch({
      ...PORTS,
      env: { SIMU_SIP_HOST: '0.0.0.0', SIMU_SIP_DOMAIN: 'sip.example.net', SIMU_PUBLIC_HOST: 'switch.example.net' },
    });
    acct = await createAccountWithDid(ctx.db, '+254711960001');
  });
  after(async () => {
    await ctx?.sw.stop();
  });

  /** An end-user and its phone token's short form, through the REST API as a customer would. */
  async function endUser(): Promise<{ ext: string; password: string; id: string }> {
    n += 1;
    const user = await api(ctx.baseUrl, acct.key, 'POST', '/api/users/create', {
      email: `d${n}-${acct.id}@example.com`,
    });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const minted = await api(ctx.baseUrl, acct.key, 'POST', '/api/phone-tokens/mint', { uuid: user.body.uuid });
    assert.equal(minted.status, 200, JSON.stringify(minted.body));
    return { ext: user.body.extension_number, password: shortPassword(minted.body.token), id: user.body.uuid };
  }

  /** SIPp registers `u` at the account's uuid domain; `extra` adds arguments (-auth_uri). */
  async function register(u: { ext: string; password: string }, port: number, extra: string[] = []) {
    const run = runSipp([
      `127.0.0.1:${PORTS.sip}`,
      ...['-sf', REGISTER, '-p', String(port), '-i', '127.0.0.1', '-m', '1'],
      ...['-timeout', '10s', '-recv_timeout', '5000', '-trace_err'],
      ...['-key', 'domain', acct.id, '-key', 'ext', u.ext, '-au', u.ext, '-ap', u.password],
      ...extra,
    ]);
    assert.equal(await run.exited, 0, run.output());
    return run.output();
  }

  it("SIPp's default digest-uri (sip:127.0.0.1:<port>) registers, and the phone takes a call from another", async () => {
    const callee = await endUser();
    const caller = await endUser();
    const phonePort = nextPort();
    const out = await register(callee, phonePort);
    assert.equal(received(out, 200), 1, out);
    assert.equal(received(out, 400), 0, out);
    await eventually(async () => {
      const list = (await api(ctx.baseUrl, acct.key, 'GET', '/api/users')).body as Array<Record<string, unknown>>;
      return list.find((x) => x.uuid === callee.id)?.registration_state === 'registered';
    }, 'the callee registered');
    // The caller's INVITE is answered 407 and signed the same way: the call goes through.
    const answering = carrier({ port: phonePort, sink: nextPort() });
    try {
      await waitForBound(phonePort);
      const calling = runSipp([
        `127.0.0.1:${PORTS.sip}`,
        ...['-sf', path.join(SCENARIOS, 'phone-call-extension.xml'), '-p', String(nextPort())],
        ...['-i', '127.0.0.1', '-m', '1', '-timeout', '30s', '-recv_timeout', '10000', '-key', 'domain', acct.id],
        ...['-key', 'ext', caller.ext, '-key', 'callee', callee.ext, '-au', caller.ext, '-ap', caller.password],
      ]);
      assert.equal(await calling.exited, 0, calling.output());
      assert.equal(await answering.exited, 0, answering.output());
    } finally {
      answering.kill();
    }
    const call = await eventually(async () => {
      const c = (await api(ctx.baseUrl, acct.key, 'GET', '/api/calls/?limit=1')).body.calls[0];
      return c?.status === 'completed' ? c : undefined;
    }, 'the call completed');
    assert.deepEqual([call.from_number, call.to_number], [caller.ext, callee.ext]);
  });

  it('a digest-uri naming the switch by its SIP domain or public host registers', async () => {
    for (const uri of ['sip.example.net', `${acct.id}.sip.example.net`, `switch.example.net:${PORTS.sip}`]) {
      const out = await register(await endUser(), nextPort(), ['-auth_uri', uri]);
      assert.equal(received(out, 200), 1, `${uri}\n${out}`);
    }
  });

  it('a digest-uri naming another server is a failed credential: 403 with the reason, not 400', async () => {
    const out = await register(await endUser(), nextPort(), ['-auth_uri', 'other.example.org']);
    assert.equal(received(out, 400), 0, out);
    assert.equal(received(out, 200), 0, out);
    assert.equal(received(out, 403), 1, out);
  });
});
