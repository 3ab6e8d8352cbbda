import { execFileSync } from 'node:child_process';
import { randomBytes, X509Certificate, createPrivateKey } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { accessSync, constants, existsSync, readFileSync, statSync, statfsSync } from 'node:fs';
import { createConnection, createServer, isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../config/index.js';
import { NgClient } from '../media/index.js';
import { openDb, pendingMigrations } from '../store/index.js';
import { runningSwitchPid } from './node-control.js';

/**
 * `simu doctor`: what operators get wrong on a new box, each check with what was found and how to fix it. A check
 * fails when the switch cannot work as configured, warns when it works with a limit the operator should know of.
 */
export type Verdict = 'ok' | 'warn' | 'fail';

export interface Finding {
  check: string;
  verdict: Verdict;
  detail: string;
  fix?: string;
}

const GIB = 1024 ** 3;
/** A certificate this close to its end is renewed now, not on the day phones start refusing it. */
const CERT_WARN_DAYS = 14;

function localAddresses(): Set<string> {
  const out = new Set<string>(['127.0.0.1', '::1']);
  for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) out.add(a.address);
  return out;
}

function onPath(bin: string): boolean {
  return (process.env.PATH ?? '/usr/bin:/bin')
    .split(':')
    .concat(['/usr/sbin', '/sbin'])
    .some((dir) => dir && existsSync(path.join(dir, bin)));
}

async function publicHost(config: Config): Promise<Finding> {
  const check = 'public host';
  const host = config.publicHost;
  const mine = localAddresses();
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  } catch {
    return {
      check,
      verdict: 'fail',
      detail: `${host} does not resolve`,
      fix: 'set SIMU_PUBLIC_HOST to a name or address phones reach',
    };
  }
  if (addresses.every((a) => a.startsWith('127.') || a === '::1'))
    return {
      check,
      verdict: 'warn',
      detail: `${host} is a loopback address: only this box reaches the switch`,
      fix: 'set SIMU_PUBLIC_HOST to the address phones and carriers reach',
    };
  if (addresses.some((a) => mine.has(a))) return { check, verdict: 'ok', detail: `${host} is an address of this box` };
  return {
    check,
    verdict: 'warn',
    detail: `${host} (${addresses.join(', ')}) is not an address of this box`,
    fix: 'right only behind a NAT that forwards the SIP port and the RTP range here; else set SIMU_PUBLIC_HOST',
  };
}

/** An OPTIONS over UDP to the running switch, answered by any SIP response within 2 s. */
function sipOptions(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
    const done = (line: string | undefined) => {
      clearTimeout(timer);
      socket.close();
      resolve(line);
    };
    const timer = setTimeout(() => done(undefined), 2000);
    socket.on('message', (msg) => done(msg.toString('latin1').split('\r\n')[0]));
    socket.on('error', () => done(undefined));
    socket.bind(0, () => {
      const local = socket.address();
      const tag = randomBytes(6).toString('hex');
      const request = [
        `OPTIONS sip:${host}:${port} SIP/2.0`,
        `Via: SIP/2.0/UDP ${local.address}:${local.port};branch=z9hG4bK${tag};rport`,
        'Max-Forwards: 70',
        `From: <sip:doctor@${host}>;tag=${tag}`,
        `To: <sip:${host}:${port}>`,
        `Call-ID: doctor-${tag}`,
        'CSeq: 1 OPTIONS',
        'User-Agent: simu-doctor',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n');
      socket.send(request, port, host);
    });
  });
}

function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

async function sipPort(config: Config, running: boolean): Promise<Finding> {
  const check = 'SIP port';
  const { host, port } = config.sip;
  const target = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  if (running) {
    const line = await sipOptions(target, port);
    return line
      ? { check, verdict: 'ok', detail: `udp ${target}:${port} answers OPTIONS (${line})` }
      : {
          check,
          verdict: 'fail',
          detail: `the running switch does not answer OPTIONS on udp ${target}:${port} within 2 s`,
          fix: 'check SIMU_SIP_HOST/SIMU_SIP_PORT and the switch log; a firewall on lo?',
        };
  }
  return (await portFree(host, port))
    ? { check, verdict: 'ok', detail: `${host}:${port} is free for the switch` }
    : {
        check,
        verdict: 'fail',
        detail: `${host}:${port} is taken by another process`,
        fix: 'stop it or set SIMU_SIP_PORT',
      };
}

function rtpPorts(config: Config): Finding {
  const check = 'RTP ports';
  const { portMin, portMax } = config.rtpengine;
  const ports = portMax - portMin + 1;
  if (ports < 100)
    return {
      check,
      verdict: 'fail',
      detail: `${portMin}-${portMax} is ${ports} ports`,
      fix: 'a call through Dial holds about 8: give a few thousand',
    };
  let ephemeral: [number, number] | undefined;
  try {
    const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    ephemeral = [lo!, hi!];
  } catch {
    /* not Linux */
  }
  const calls = Math.floor(ports / 8);
  if (ephemeral && portMin <= ephemeral[1] && portMax >= ephemeral[0])
    return {
      check,
      verdict: 'warn',
      detail: `${portMin}-${portMax} overlaps the kernel's ephemeral range ${ephemeral[0]}-${ephemeral[1]}`,
      fix: 'outgoing connections may take RTP ports: move one of the ranges (sysctl net.ipv4.ip_local_port_range)',
    };
  return { check, verdict: 'ok', detail: `${portMin}-${portMax}: about ${calls} calls through Dial at once` };
}

async function rtpengine(config: Config, running: boolean): Promise<Finding[]> {
  const out: Finding[] = [];
  const check = 'rtpengine';
  const external = config.rtpengine.urls;
  if (external.length === 0) {
    if (!onPath('rtpengine'))
      out.push({
        check,
        verdict: 'fail',
        detail: 'rtpengine is not installed',
        fix: 'apt-get install rtpengine-daemon',
      });
    const iface = config.rtpengine.interface;
    if (!localAddresses().has(iface))
      out.push({
        check: 'rtpengine interface',
        verdict: 'fail',
        detail: `${iface} is not an address of this box: rtpengine cannot relay media on it`,
        fix: "set SIMU_RTPENGINE_INTERFACE to one of this box's addresses",
      });
    else out.push({ check: 'rtpengine interface', verdict: 'ok', detail: `relays media on ${iface}` });
  }
  const engines = external.length > 0 ? external : running ? [`127.0.0.1:${config.rtpengine.ngPort}`] : [];
  for (const url of engines) {
    const i = url.lastIndexOf(':');
    const client = new NgClient({
      host: url.slice(0, i).replace(/^\[|\]$/g, ''),
      port: Number(url.slice(i + 1)),
      timeoutMs: 2000,
    });
    const pong = await client.ping(2000).catch(() => false);
    client.close();
    out.push(
      pong
        ? { check, verdict: 'ok', detail: `${url} answers its ng ping` }
        : {
            check,
            verdict: 'fail',
            detail: `${url} does not answer its ng ping`,
            fix: 'is it running? its --listen-ng address?',
          },
    );
  }
  if (engines.length === 0 && out.every((f) => f.verdict === 'ok'))
    out.push({ check, verdict: 'ok', detail: 'installed; the switch starts and supervises it' });
  return out;
}

async function persistence(config: Config): Promise<Finding> {
  const check = 'media persistence';
  const redis = config.rtpengine.redis;
  if (config.rtpengine.urls.length > 0) return { check, verdict: 'ok', detail: 'external engines keep their own' };
  if (redis === 'off')
    return {
      check,
      verdict: 'warn',
      detail: 'off: calls whose rtpengine restarts are ended (END.0502)',
      fix: 'SIMU_RTPENGINE_REDIS=auto',
    };
  if (redis === 'auto')
    return onPath('redis-server')
      ? { check, verdict: 'ok', detail: "a redis-server the switch starts keeps rtpengine's calls across its restarts" }
      : {
          check,
          verdict: 'warn',
          detail: 'redis-server is not installed: persistence off',
          fix: 'apt-get install redis-server',
        };
  const [hostPort] = redis.split('/');
  const i = hostPort!.lastIndexOf(':');
  const reachable = await new Promise<boolean>((resolve) => {
    const s = createConnection({ host: hostPort!.slice(0, i), port: Number(hostPort!.slice(i + 1)), timeout: 2000 });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
    s.once('timeout', () => (s.destroy(), resolve(false)));
  });
  return reachable
    ? { check, verdict: 'ok', detail: `Redis ${hostPort} reachable` }
    : {
        check,
        verdict: 'fail',
        detail: `Redis ${hostPort} is not reachable`,
        fix: 'start it or set SIMU_RTPENGINE_REDIS',
      };
}

function disk(config: Config): Finding {
  const check = 'free disk';
  let dir = config.dataDir;
  while (!existsSync(dir)) dir = path.dirname(dir);
  const s = statfsSync(dir);
  const free = s.bavail * s.bsize;
  const detail = `${(free / GIB).toFixed(1)} GiB free for ${config.dataDir} (recordings, store, speech cache)`;
  if (free < GIB) return { check, verdict: 'fail', detail, fix: 'free space or move SIMU_DATA_DIR' };
  if (free < 5 * GIB)
    return { check, verdict: 'warn', detail, fix: 'recordings fill it: watch it or shorten retention' };
  return { check, verdict: 'ok', detail };
}

function clock(): Finding {
  const check = 'clock';
  try {
    const synced = execFileSync('timedatectl', ['show', '-p', 'NTPSynchronized', '--value'], {
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 3000,
    })
      .toString()
      .trim();
    if (synced === 'yes') return { check, verdict: 'ok', detail: 'synchronised (NTP)' };
    return {
      check,
      verdict: 'fail',
      detail: 'not synchronised: call records, signatures (5-minute tolerance) and tokens depend on it',
      fix: 'apt-get install systemd-timesyncd (or chrony) and enable it',
    };
  } catch {
    return {
      check,
      verdict: 'warn',
      detail: 'cannot tell (no timedatectl or no systemd here)',
      fix: 'make sure NTP runs',
    };
  }
}

function certificate(config: Config): Finding | undefined {
  const check = 'TLS certificate';
  if (config.sip.tlsPort === 0 && config.sip.wssPort === 0) return undefined;
  const certFile = config.sip.tlsCert || path.join(config.dataDir, 'sip-selfsigned.crt');
  const keyFile = config.sip.tlsKey || path.join(config.dataDir, 'sip-selfsigned.key');
  if (!existsSync(certFile))
    return config.sip.tlsCert
      ? { check, verdict: 'fail', detail: `${certFile} does not exist`, fix: 'set SIMU_SIP_TLS_CERT to the PEM file' }
      : {
          check,
          verdict: 'warn',
          detail: 'a self-signed one is made at first start',
          fix: 'phones must trust it; or set SIMU_SIP_TLS_CERT',
        };
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(readFileSync(certFile));
  } catch (e) {
    return { check, verdict: 'fail', detail: `${certFile} is not a PEM certificate: ${(e as Error).message}` };
  }
  try {
    if (!x509.checkPrivateKey(createPrivateKey(readFileSync(keyFile))))
      return { check, verdict: 'fail', detail: `${keyFile} is not the key of ${certFile}` };
  } catch (e) {
    return { check, verdict: 'fail', detail: `${keyFile} cannot be read as a private key: ${(e as Error).message}` };
  }
  const daysLeft = Math.floor((Date.parse(x509.validTo) - Date.now()) / 86_400_000);
  const who = `${x509.subject.replace(/\n/g, ', ')}, until ${new Date(x509.validTo).toISOString().slice(0, 10)}`;
  if (daysLeft < 0)
    return { check, verdict: 'fail', detail: `expired: ${who}`, fix: 'renew it; SIGHUP loads the new one' };
  if (daysLeft < CERT_WARN_DAYS)
    return {
      check,
      verdict: 'warn',
      detail: `${daysLeft} days left: ${who}`,
      fix: 'renew it; SIGHUP loads the new one',
    };
  const selfSigned = x509.issuer === x509.subject;
  return selfSigned
    ? {
        check,
        verdict: 'warn',
        detail: `self-signed, ${daysLeft} days left: ${who}`,
        fix: 'phones must trust it; or set SIMU_SIP_TLS_CERT',
      }
    : { check, verdict: 'ok', detail: `${daysLeft} days left: ${who}` };
}

function dataDirectory(config: Config): Finding {
  const check = 'data directory';
  const dir = config.dataDir;
  if (!existsSync(dir)) return { check, verdict: 'warn', detail: `${dir} does not exist yet: made at first start` };
  try {
    accessSync(dir, constants.W_OK | constants.R_OK);
  } catch {
    return {
      check,
      verdict: 'fail',
      detail: `${dir} is not writable by this user`,
      fix: `chown -R the switch's user ${dir}`,
    };
  }
  const mode = statSync(dir).mode;
  if (mode & 0o002)
    return { check, verdict: 'fail', detail: `${dir} is writable by every user`, fix: `chmod o-w ${dir}` };
  const secret = path.join(dir, 'server-secret');
  if (existsSync(secret) && statSync(secret).mode & 0o077)
    return { check, verdict: 'fail', detail: `${secret} is readable by others`, fix: `chmod 600 ${secret}` };
  return { check, verdict: 'ok', detail: `${dir} is writable, closed to others` };
}

async function store(config: Config, running: boolean): Promise<Finding> {
  const check = 'store';
  if (!config.databaseUrl && !existsSync(path.join(config.dataDir, 'simu.db')))
    return { check, verdict: 'warn', detail: 'no store yet: the switch makes it at first start' };
  const db = openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    const pending = await pendingMigrations(db);
    if (pending.length === 0) return { check, verdict: 'ok', detail: 'reachable, migrations current' };
    return {
      check,
      verdict: 'warn',
      detail: `${pending.length} migrations of this build not run yet (${pending.slice(0, 3).join(', ')}${pending.length > 3 ? ', ...' : ''})`,
      fix: running ? 'the running switch is an older build: restart it to run them' : 'the switch runs them at start',
    };
  } catch (e) {
    return {
      check,
      verdict: 'fail',
      detail: `cannot read the store: ${(e as Error).message}`,
      fix: 'check SIMU_DATABASE_URL',
    };
  } finally {
    await db.destroy();
  }
}

function tools(): Finding {
  const check = 'packages';
  const missing = [
    ['espeak-ng', 'espeak-ng'],
    ['sox', 'sox'],
    ['openssl', 'openssl'],
  ].filter(([bin]) => !onPath(bin!));
  return missing.length === 0
    ? { check, verdict: 'ok', detail: 'espeak-ng, sox and openssl installed' }
    : {
        check,
        verdict: 'fail',
        detail: `missing: ${missing.map(([bin]) => bin).join(', ')}`,
        fix: `apt-get install ${missing.map(([, pkg]) => pkg).join(' ')}`,
      };
}

/** Every check, in the order an operator fixes them. */
export async function diagnose(config: Config): Promise<Finding[]> {
  const running = runningSwitchPid(config.dataDir) !== undefined;
  const cert = certificate(config);
  return [
    tools(),
    dataDirectory(config),
    disk(config),
    clock(),
    await store(config, running),
    await publicHost(config),
    await sipPort(config, running),
    rtpPorts(config),
    ...(await rtpengine(config, running)),
    await persistence(config),
    ...(cert ? [cert] : []),
  ];
}
