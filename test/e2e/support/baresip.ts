/**
 * baresip 1.0.0 as a registered phone in the tests' network namespaces (test/support/netns-peer.ts), for
 * the *-baresip-peer.ts files that run inside `unshare -n`: an end-user with a phone token for it, its config
 * (G.711, no sound card; optionally a file it says, sndfile writing what it hears, ctrl_tcp on sip port + 3, mwi),
 * its registration at the switch, its commands over ctrl_tcp, what its sndfile dumps held, and the account's
 * newest ended CDR.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Db } from '../../../store/index.js';
import { api, speechSecondsOf } from './harness.js';
import { nextPorts } from '../../support/ports.js';

/** A phone of an account as baresip registers it: its extension, phone token and the account's SIP domain. */
export interface BaresipAccount {
  ext: string;
  token: string;
  domain: string;
  /** The switch's SIP port (the outbound proxy). */
  switchPort: number;
  /** The outbound proxy's address (127.0.0.1): a front's, say. */
  switchHost?: string;
  /** How it registers and calls (udp). */
  transport?: 'udp' | 'tcp';
}

export interface BaresipOptions {
  /** The folder its own folder (config, accounts, and by default what sndfile writes) is made in. */
  work: string;
  name: string;
  phone: BaresipAccount;
  /** It quits after this many seconds (and is killed 5 s later by baresipDials). */
  seconds: number;
  /** Dials this at start (`/dial`). */
  dial?: string;
  /** What it says: a WAV file (aufile); silence without. */
  says?: string;
  /** sndfile writes what it hears (`*-dec.wav`) and says into this folder (true: its own folder). */
  records?: boolean | string;
  /** Remote control over ctrl_tcp (baresipCommand) on its sip port + 3. */
  ctrl?: boolean;
  /** Subscribes to message-summary (its mwi module). */
  mwi?: boolean;
}

export interface BaresipPhone {
  dir: string;
  sipPort: number;
  /** Its ctrl_tcp port (sipPort + 3: baresip takes sip_listen's port and the next one for TLS). */
  ctrl: number;
  /** What it printed so far. */
  log: string;
  child: ChildProcess;
}

/** Starts baresip registered as `o.phone` (digest with the phone token) at the switch. */
export function spawnBaresip(o: BaresipOptions): BaresipPhone {
  const dir = mkdtempSync(path.join(o.work, `${o.name}-`));
  // baresip takes sip_listen's port and the next one (TLS); ctrl_tcp sits at + 3.
  const sipPort = nextPorts(o.ctrl ? 4 : 2);
  // Its RTP and RTCP ports from the block too: by default it draws them at random from 10000-20000, across the
  // test ports, and could take one handed out to something that has not bound it yet. It takes an even port for
  // RTP (RTCP the one above), so the range of 20 starts even.
  const rtp = nextPorts(21);
  const rtpMin = rtp + (rtp % 2);
  const snd = o.records === true ? dir : o.records || undefined;
  writeFileSync(
    path.join(dir, 'config'),
    [
      `sip_listen 127.0.0.1:${sipPort}`,
      `rtp_ports ${rtpMin}-${rtpMin + 19}`,
      `audio_source ${o.says ? `aufile,${o.says}` : 'aubridge,nil'}`,
      'audio_player aubridge,nil',
      'audio_alert aubridge,nil',
      'module_path /usr/lib/baresip/modules',
      ...(o.ctrl ? ['module stdio.so'] : []),
      'module g711.so',
      ...(o.says ? ['module aufile.so'] : []),
      'module aubridge.so',
      ...(snd ? ['module sndfile.so', `snd_path ${snd}`] : []),
      'module_app account.so',
      'module_app menu.so',
      ...(o.mwi ? ['module_app mwi.so'] : []),
      ...(o.ctrl ? ['module_app ctrl_tcp.so', `ctrl_tcp_listen 127.0.0.1:${sipPort + 3}`] : []),
    ].join('\n') + '\n',
  );
  const { ext, token, domain, switchPort, switchHost = '127.0.0.1', transport = 'udp' } = o.phone;
  writeFileSync(
    path.join(dir, 'accounts'),
    // Over TCP the transport is named on the outbound proxy alone: baresip 1.0.0 fails to register (ENOSYS) an
    // account line much longer than 520 bytes, and a phone token takes most of it.
    (transport === 'udp'
      ? `<sip:${ext}@${domain};transport=udp>;auth_user=${ext};auth_pass=${token};outbound="sip:${switchHost}:${switchPort}"`
      : `<sip:${ext}@${domain}>;auth_user=${ext};auth_pass=${token};outbound="sip:${switchHost}:${switchPort};transport=tcp"`) +
      `;regint=600${o.mwi ? ';mwi=yes' : ''}\n`,
  );
  const args = ['-4', '-n', 'v0', '-f', dir, ...(o.dial ? ['-e', `/dial ${o.dial}`] : []), '-t', String(o.seconds)];
  const child = spawn('baresip', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const phone: BaresipPhone = { dir, sipPort, ctrl: sipPort + 3, log: '', child };
  child.stdout!.on('data', (d) => (phone.log += String(d)));
  child.stderr!.on('data', (d) => (phone.log += String(d)));
  return phone;
}

/** One baresip run that dials `o.dial` and quits after `o.seconds` (killed 5 s later if it has not); its log and folder. */
export async function baresipDials(o: BaresipOptions & { dial: string }): Promise<{ log: string; dir: string }> {
  const phone = spawnBaresip(o);
  await exitOf(phone, (o.seconds + 5) * 1000);
  return { log: phone.log, dir: phone.dir };
}

/** Waits for the phone to exit, killing it after `ms`. */
export async function exitOf(phone: BaresipPhone, ms: number): Promise<void> {
  const timer = setTimeout(() => phone.child.pid && process.kill(phone.child.pid, 'SIGKILL'), ms);
  if (phone.child.exitCode === null && phone.child.signalCode === null)
    await new Promise((r) => phone.child.on('exit', r));
  clearTimeout(timer);
}

/** A new end-user of the account with a phone token (600 s) for its phone: its uuid, extension and token. */
export async function phoneUser(
  ctx: { baseUrl: string },
  acct: { key: string },
  email: string,
): Promise<{ uuid: string; ext: string; token: string }> {
  const user = await api(ctx.baseUrl, acct.key, 'POST', '/api/users/create', { email });
  const minted = await api(ctx.baseUrl, acct.key, 'POST', '/api/phone-tokens/mint', {
    uuid: user.body.uuid,
    ttl_seconds: 600,
  });
  return { uuid: user.body.uuid, ext: user.body.extension_number, token: minted.body.token };
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

/** The account's newest CDR once it has ended (up to 10 s), else undefined. */
export async function lastEndedCall(db: Db, accountId: string) {
  for (let i = 0; i < 100; i++) {
    const row = await db('calls').where({ account_id: accountId }).orderBy('created_at', 'desc').first();
    if (row?.ended_at) return row;
    await new Promise((r) => setTimeout(r, 100));
  }
  return undefined;
}
