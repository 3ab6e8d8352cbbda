/**
 * Issue 19 item 5, "done when": a phone behind a MASQUERADE NAT with a short conntrack UDP timeout still receives a
 * call long after it registered, because the switch keeps its NAT mapping open (sip/nat/keep-alive.ts). The phone
 * is baresip in a namespace behind a router namespace (test/e2e/support/nat-lab.ts); the caller is a SIPp phone of the
 * same account calling its extension. Control: with keep-alives off, the same wait loses the call (the router
 * drops the switch's INVITE), so the NAT really forgets.
 *
 * CI timing: conntrack 10 s, keep-alives every 4 s, call 60 s after registering (NAT_FULL=1: the figures,
 * conntrack 30 s, keep-alives every 20 s, call five minutes after registering).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { shortPassword } from '../../../sip/index.js';
import { setAccountSipLabel } from '../../../store/index.js';
import {
  startTestSwitch,
  createAccountWithDid,
  runSipp,
  api,
  SCENARIOS,
  type TestAccount,
} from '../support/harness.js';
import { natLabAvailable, startNatLab, type NatLab } from '../support/nat-lab.js';
import { nextPort } from '../../support/ports.js';
import { eventually } from '../../support/wait.js';

const FULL = process.env.NAT_FULL === '1';
const CONNTRACK_S = FULL ? 30 : 10;
const KEEPALIVE_S = FULL ? 20 : 4;
const HOLD_S = Number(process.env.NAT_HOLD_S ?? (FULL ? 300 : 60));
const CONTROL_HOLD_S = CONNTRACK_S * 2 + 2;

describe('e2e: NAT that holds (baresip behind MASQUERADE, conntrack UDP timeout short)', function () {
  this.timeout((HOLD_S + CONTROL_HOLD_S + 150) * 1000);
  let lab: NatLab;

  before(function () {
    if (!natLabAvailable()) this.skip(); // needs root, ip and iptables (CI runs as root)
    lab = startNatLab(CONNTRACK_S);
  });
  after(() => lab?.close());

  /** One switch, one account, baresip registered from behind the NAT; returns what the call step needs. */
  async function scenario(keepAliveSeconds: number, holdSeconds: number) {
    const ctx = await startTestSwitch({
      env: {
        SIMU_SIP_HOST: lab.hostIp,
        SIMU_PUBLIC_HOST: lab.hostIp,
        SIMU_SIP_DOMAIN: 'sip.example.net',
        SIMU_SIP_KEEPALIVE_SECONDS: String(keepAliveSeconds),
      },
    });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-nat-phone-'));
    let phone: ReturnType<NatLab['spawnInPhone']> | undefined;
    let log = '';
    try {
      const a: TestAccount = await createAccountWithDid(
        ctx.db,
        `+2547119${String(process.pid % 1000).padStart(3, '0')}${keepAliveSeconds > 0 ? 1 : 0}`,
      );
      const label = `natlab-${keepAliveSeconds > 0 ? 'on' : 'off'}`;
      await setAccountSipLabel(ctx.db, a.id, label);
      const domain = `${label}.sip.example.net`;
      const user = async (n: number) => {
        const u = await api(ctx.baseUrl, a.key, 'POST', '/api/users/create', { email: `n${n}-${a.id}@example.com` });
        const m = await api(ctx.baseUrl, a.key, 'POST', '/api/phone-tokens/mint', { uuid: u.body.uuid });
        return { ext: u.body.extension_number as string, id: u.body.uuid as string, token: m.body.token as string };
      };
      const callee = await user(1);
      const caller = await user(2);
      writeFileSync(
        path.join(dir, 'config'),
        [
          `sip_listen ${lab.phoneIp}:5060`,
          'module_path /usr/lib/baresip/modules',
          'module stdio.so',
          'module g711.so',
          'module aubridge.so',
          'module_app account.so',
          'module_app menu.so',
          'audio_source aubridge,nil',
          'audio_player aubridge,nil',
          'audio_alert aubridge,nil',
          'answermode auto',
        ].join('\n') + '\n',
      );
      // As docs/softphones.md says, with a registration interval long enough that no refresh crosses the NAT
      // during the test (a refresh would reopen the mapping by itself).
      writeFileSync(
        path.join(dir, 'accounts'),
        `<sip:${callee.ext}@${domain};transport=udp>;auth_user=${callee.ext};auth_pass=${callee.token};` +
          `outbound="sip:${lab.hostIp}:${ctx.ports.sip}";regint=3600;answermode=auto\n`,
      );
      phone = lab.spawnInPhone('baresip', ['-4', '-n', lab.phoneIf, '-f', dir]);
      let answered = false;
      phone.stdout!.on('data', (d) => {
        log += String(d);
        // baresip 1.0.0's answermode=auto does not answer (seen in test/e2e/phones/forking-baresip-peer.ts too): the
        // person presses 'a' (stdio module) when it rings.
        if (!answered && /Incoming call/.test(log)) {
          answered = true;
          phone?.stdin?.write('a');
        }
      });
      phone.stderr!.on('data', (d) => (log += String(d)));
      await eventually(async () => {
        const list = (await api(ctx.baseUrl, a.key, 'GET', '/api/users')).body as Array<Record<string, unknown>>;
        return list.find((x) => x.uuid === callee.id)?.registration_state === 'registered';
      }, 'baresip registered through the NAT');
      const registeredAt = Date.now();
      await new Promise((r) => setTimeout(r, holdSeconds * 1000));
      const calling = runSipp([
        `${lab.hostIp}:${ctx.ports.sip}`,
        '-sf',
        path.join(SCENARIOS, 'phone-call-extension.xml'),
        '-i',
        lab.hostIp,
        '-p',
        String(nextPort()),
        '-m',
        '1',
        '-timeout',
        '60s',
        '-recv_timeout',
        '50000',
        ...['-key', 'domain', domain, '-key', 'ext', caller.ext, '-key', 'callee', callee.ext],
        ...['-au', caller.ext, '-ap', shortPassword(caller.token)],
        ...(process.env.DEBUG_SIPP ? ['-trace_msg', '-message_file', '/tmp/d/nat-call.log'] : []),
      ]);
      const code = await calling.exited;
      const after = Math.round((Date.now() - registeredAt) / 1000);
      return { code, output: calling.output(), phoneLog: log, after, ctx, a, callee, caller };
    } finally {
      if (phone?.pid) process.kill(phone.pid, 'SIGKILL');
      await ctx.sw.stop();
    }
  }

  it(`keep-alives every ${KEEPALIVE_S} s: the phone takes a call ${HOLD_S} s after registering (conntrack ${CONNTRACK_S} s)`, async () => {
    const r = await scenario(KEEPALIVE_S, HOLD_S);
    assert.equal(r.code, 0, `${r.output}\n--- baresip:\n${r.phoneLog}`);
    assert.ok(r.after >= HOLD_S, `called ${r.after} s after registering`);
    assert.match(r.phoneLog, /[Cc]all (established|answered)|Incoming call/, r.phoneLog);
  });

  it(`control, keep-alives off: the same phone is unreachable ${CONTROL_HOLD_S} s after registering`, async () => {
    const r = await scenario(0, CONTROL_HOLD_S);
    assert.notEqual(r.code, 0, 'the call must not have been answered');
    // It failed for the NAT, not for anything before the phone: the caller was authenticated and rang out.
    assert.match(r.output, /(408|480|487|500|503) /, r.output);
    assert.doesNotMatch(r.phoneLog, /Incoming call/, 'the INVITE never crossed the NAT');
  });
});
