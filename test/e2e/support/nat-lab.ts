/**
 * A home router on this machine: a phone namespace behind a router namespace that MASQUERADEs it towards the host,
 * where the switch listens. The router's conntrack UDP timeouts (plain and stream) are set in the router namespace
 * only (the host's own are untouched), so a mapping is forgotten after that many idle seconds, as a real NAT does.
 * Names and subnets are derived from the process id; close() deletes everything it made. Needs root, ip, iptables.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';

export interface NatLab {
  /** The host's address on the router's wide side: the switch listens here and phones reach it. */
  hostIp: string;
  /** The phone's private address (behind the NAT). */
  phoneIp: string;
  /** The router's wide-side address: what the switch sees as the phone's source. */
  routerIp: string;
  /** The phone's interface name inside its namespace. */
  phoneIf: string;
  /** Starts a program inside the phone's namespace. */
  spawnInPhone(cmd: string, args: string[]): ChildProcess;
  close(): void;
}

const run = (...args: string[]) => execFileSync(args[0]!, args.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });

/** Whether this process can build the lab (root, ip and iptables present). */
export function natLabAvailable(): boolean {
  try {
    if (process.getuid?.() !== 0) return false;
    run('ip', '-V');
    run('iptables', '-V');
    return true;
  } catch {
    return false;
  }
}

export function startNatLab(conntrackUdpSeconds: number): NatLab {
  const k = process.pid % 250;
  const tag = `${process.pid % 100000}`;
  const router = `simu-natr-${tag}`;
  const phone = `simu-natp-${tag}`;
  const hostIf = `snh${tag}`;
  const wanIf = `snw${tag}`;
  const lanIf = `snl${tag}`;
  const phoneIf = `snp${tag}`;
  const hostIp = `10.201.${k}.1`;
  const routerIp = `10.201.${k}.2`;
  const lanIp = `10.202.${k}.1`;
  const phoneIp = `10.202.${k}.2`;
  const close = () => {
    for (const ns of [phone, router]) {
      try {
        run('ip', 'netns', 'del', ns);
      } catch {
        /* not made */
      }
    }
    try {
      run('ip', 'link', 'del', hostIf);
    } catch {
      /* went with the namespace */
    }
  };
  close(); // leftovers of a killed run with the same pid
  try {
    run('ip', 'netns', 'add', router);
    run('ip', 'netns', 'add', phone);
    run('ip', 'link', 'add', hostIf, 'type', 'veth', 'peer', 'name', wanIf);
    run('ip', 'link', 'set', wanIf, 'netns', router);
    run('ip', 'addr', 'add', `${hostIp}/24`, 'dev', hostIf);
    run('ip', 'link', 'set', hostIf, 'up');
    run('ip', '-n', router, 'addr', 'add', `${routerIp}/24`, 'dev', wanIf);
    run('ip', '-n', router, 'link', 'set', wanIf, 'up');
    run('ip', '-n', router, 'link', 'set', 'lo', 'up');
    run('ip', '-n', router, 'link', 'add', lanIf, 'type', 'veth', 'peer', 'name', phoneIf);
    run('ip', '-n', router, 'link', 'set', phoneIf, 'netns', phone);
    run('ip', '-n', router, 'addr', 'add', `${lanIp}/24`, 'dev', lanIf);
    run('ip', '-n', router, 'link', 'set', lanIf, 'up');
    run('ip', '-n', phone, 'addr', 'add', `${phoneIp}/24`, 'dev', phoneIf);
    run('ip', '-n', phone, 'link', 'set', phoneIf, 'up');
    run('ip', '-n', phone, 'link', 'set', 'lo', 'up');
    run('ip', '-n', phone, 'route', 'add', 'default', 'via', lanIp);
    run('ip', 'netns', 'exec', router, 'sysctl', '-qw', 'net.ipv4.ip_forward=1');
    run('ip', 'netns', 'exec', router, 'iptables', '-t', 'nat', '-A', 'POSTROUTING', '-o', wanIf, '-j', 'MASQUERADE');
    const t = String(conntrackUdpSeconds);
    run(
      'ip',
      'netns',
      'exec',
      router,
      'sysctl',
      '-qw',
      `net.netfilter.nf_conntrack_udp_timeout=${t}`,
      `net.netfilter.nf_conntrack_udp_timeout_stream=${t}`,
    );
  } catch (e) {
    close();
    throw e;
  }
  return {
    hostIp,
    phoneIp,
    routerIp,
    phoneIf,
    spawnInPhone: (cmd, args) =>
      spawn('ip', ['netns', 'exec', phone, cmd, ...args], { stdio: ['pipe', 'pipe', 'pipe'] }),
    close,
  };
}
