import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { nextPorts } from '../support/ports.js';

/** A phone of an account as baresip registers it: its extension, phone token and the account's SIP domain. */
export interface BaresipAccount {
  ext: string;
  token: string;
  domain: string;
  /** The switch's SIP port on 127.0.0.1 (the outbound proxy). */
  switchPort: number;
}

/**
 * One baresip run, inside the network namespace of a *-peer.ts (TESTING-WITH-PEERS.md): registers as `phone`
 * (digest with the phone token), dials `target`, quits after `seconds` (killed 5 s later if it has not). `config`
 * adds lines to its config (e.g. the sndfile module). Returns what it logged and its folder.
 */
export async function baresipDials(o: {
  work: string;
  phone: BaresipAccount;
  target: string;
  seconds: number;
  config?: string[];
}): Promise<{ log: string; dir: string }> {
  const dir = mkdtempSync(path.join(o.work, 'phone-'));
  const sipPort = nextPorts(2); // baresip takes sip_listen's port and the next one (TLS)
  writeFileSync(
    path.join(dir, 'config'),
    [
      `sip_listen 127.0.0.1:${sipPort}`,
      'module_path /usr/lib/baresip/modules',
      'module g711.so',
      'module aubridge.so',
      'module_app account.so',
      'module_app menu.so',
      'audio_player aubridge,nil',
      'audio_source aubridge,nil',
      'audio_alert aubridge,nil',
      ...(o.config ?? []),
    ].join('\n') + '\n',
  );
  const { ext, token, domain, switchPort } = o.phone;
  writeFileSync(
    path.join(dir, 'accounts'),
    `<sip:${ext}@${domain};transport=udp>;auth_user=${ext};auth_pass=${token};` +
      `outbound="sip:127.0.0.1:${switchPort}";regint=600\n`,
  );
  const phone = spawn('baresip', ['-4', '-n', 'v0', '-f', dir, '-e', `/dial ${o.target}`, '-t', String(o.seconds)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  phone.stdout.on('data', (d) => (log += String(d)));
  phone.stderr.on('data', (d) => (log += String(d)));
  const timer = setTimeout(() => phone.pid && process.kill(phone.pid, 'SIGKILL'), (o.seconds + 5) * 1000);
  await new Promise((r) => phone.on('exit', r));
  clearTimeout(timer);
  return { log, dir };
}
