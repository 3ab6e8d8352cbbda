/**
 * Run inside a private network namespace by registrar-baresip.test.ts (baresip will not start on `lo` alone,
 * test/support/netns-peer.ts): starts a SipApplication + Registrar on 127.0.0.1, lets a baresip phone
 * register with a phone token, and prints what happened as one JSON line. Every child is killed by PID.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { findEndUser } from '../../store/index.js';
import { accountWithPhone, startRegistrar } from './registrar-fixture.js';

const port = Number(process.env.REG_PORT);
const dir = String(process.env.REG_DIR);
const algorithms = (process.env.REG_ALGS ?? 'SHA-256,MD5').split(',') as Array<'SHA-256' | 'MD5'>;
const fx = await startRegistrar({ port, extra: { settings: { digestAlgorithms: algorithms } } });
const a = await accountWithPhone(fx.db, 'baresip');
const domain = `${a.account.id}.sip.simu.test`;
const statuses: number[] = [];

writeFileSync(
  path.join(dir, 'config'),
  [
    `sip_listen 127.0.0.1:${port + 30}`,
    'module_path /usr/lib/baresip/modules',
    'module g711.so',
    'module_app account.so',
    'module_app menu.so',
    'audio_player aubridge,nil',
    'audio_source aubridge,nil',
    'audio_alert aubridge,nil',
    'module aubridge.so',
  ].join('\n') + '\n',
);
writeFileSync(
  path.join(dir, 'accounts'),
  `<sip:1001@${domain};transport=udp>;auth_user=1001;auth_pass=${a.token};` +
    `outbound="sip:127.0.0.1:${port}";regint=600\n`,
);

const phone = spawn('baresip', ['-4', '-n', 'v0', '-f', dir, '-s'], { stdio: ['ignore', 'pipe', 'pipe'] });
let log = '';
phone.stdout.on('data', (d) => (log += String(d)));
phone.stderr.on('data', (d) => (log += String(d)));

const deadline = Date.now() + 8000;
// baresip logs "<aor>: Register: <error>" when it gives up; no need to wait out the deadline then.
while (
  Date.now() < deadline &&
  !fx.registrar.location.isRegistered(a.account.id, '1001') &&
  !/: Register: /.test(log)
) {
  await new Promise((r) => setTimeout(r, 100));
}
await fx.registrar.settled();
const bindings = fx.registrar.location.lookup(a.account.id, '1001');
const user = await findEndUser(fx.db, a.account.id, a.user.id);
if (phone.pid) process.kill(phone.pid, 'SIGKILL');
for (const m of log.matchAll(/SIP\/2\.0 (\d{3})/g)) statuses.push(Number(m[1]));
console.log(
  JSON.stringify({
    registered: bindings.length > 0,
    contact: bindings[0]?.contact,
    state: user?.registration_state,
    lastRegisteredAt: user?.last_registered_at,
    events: fx.events.map((e) => e.code),
    statuses,
    log: log.slice(-3000),
  }),
);
await fx.close();
process.exit(0);
