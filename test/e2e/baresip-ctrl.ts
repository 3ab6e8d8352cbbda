/**
 * baresip 1.0.0 as a registered phone in the tests' network namespaces (/work/shared/TESTING-WITH-PEERS.md): its
 * config (G.711, sndfile writing what it hears, ctrl_tcp on sip port + 3), its commands over ctrl_tcp, and what
 * its sndfile dumps held. Used by peers that run inside `unshare -n` (transfer-baresip-peer.ts; baresip-phone.ts
 * has the phone that registers and dials one target).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { speechSecondsOf } from './harness.js';
import { nextPorts } from '../support/ports.js';

export interface BaresipPhone {
  dir: string;
  sipPort: number;
  /** Its ctrl_tcp port (sipPort + 3: baresip takes sip_listen's port and the next one for TLS). */
  ctrl: number;
  /** What it printed so far. */
  log: string;
  child: ChildProcess;
}

/** Starts baresip registered as `u.ext` of `domain` at the switch on 127.0.0.1:`switchPort`, for `seconds`. */
export function startBaresip(
  work: string,
  name: string,
  u: { ext: string; token: string },
  o: { domain: string; switchPort: number; seconds?: number },
): BaresipPhone {
  const dir = mkdtempSync(path.join(work, `${name}-`));
  const sipPort = nextPorts(4);
  writeFileSync(
    path.join(dir, 'config'),
    [
      `sip_listen 127.0.0.1:${sipPort}`,
      'audio_source aubridge,nil',
      'audio_player aubridge,nil',
      'audio_alert aubridge,nil',
      'module_path /usr/lib/baresip/modules',
      'module stdio.so',
      'module g711.so',
      'module aubridge.so',
      'module sndfile.so',
      `snd_path ${dir}`,
      'module_app account.so',
      'module_app menu.so',
      'module_app ctrl_tcp.so',
      `ctrl_tcp_listen 127.0.0.1:${sipPort + 3}`,
    ].join('\n') + '\n',
  );
  writeFileSync(
    path.join(dir, 'accounts'),
    `<sip:${u.ext}@${o.domain};transport=udp>;auth_user=${u.ext};auth_pass=${u.token};` +
      `outbound="sip:127.0.0.1:${o.switchPort}";regint=600\n`,
  );
  const child = spawn('baresip', ['-4', '-n', 'v0', '-f', dir, '-t', String(o.seconds ?? 40)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const phone: BaresipPhone = { dir, sipPort, ctrl: sipPort + 3, log: '', child };
  child.stdout!.on('data', (d) => (phone.log += String(d)));
  child.stderr!.on('data', (d) => (phone.log += String(d)));
  return phone;
}

/** One ctrl_tcp command (a netstring holding JSON), e.g. `accept`, `hangup`, `transfer` with a URI. */
export function baresipCommand(port: number, cmd: string, params = ''): Promise<void> {
  return new Promise<void>((resolve) => {
    const json = JSON.stringify({ command: cmd, params, token: cmd });
    const sock = net.connect(port, '127.0.0.1', () => sock.write(`${Buffer.byteLength(json)}:${json},`));
    const done = (): void => {
      sock.destroy();
      resolve();
    };
    sock.on('data', done);
    sock.on('error', done);
    setTimeout(done, 1000);
  });
}

/** Polls `pred` every 50 ms for up to `ms`; its last value. */
export async function until(pred: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!(await pred()) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  return pred();
}

/** The most speech (seconds of 20 ms frames at speech level) in any of the phone's decoded dumps (`-dec.wav`). */
export function heardSeconds(phone: Pick<BaresipPhone, 'dir'>): number {
  let best = 0;
  for (const f of readdirSync(phone.dir).filter((n) => n.endsWith('-dec.wav'))) {
    const buf = readFileSync(path.join(phone.dir, f));
    const at = buf.indexOf('data', 12);
    if (at < 0) continue;
    const pcm = buf.subarray(at + 8);
    best = Math.max(best, speechSecondsOf(new Int16Array(pcm.buffer, pcm.byteOffset, Math.floor(pcm.length / 2))));
  }
  return best;
}
