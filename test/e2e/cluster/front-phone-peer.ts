/**
 * Run inside a private network namespace by front-phone.test.ts (baresip will not start on `lo` alone,
 * test/support/netns-peer.ts): three nodes on one PostgreSQL behind Kamailio (deploy/kamailio/kamailio.cfg, on
 * 127.0.0.2) and a baresip phone registered through the front over TCP. A SIPp carrier (127.0.0.1) calls a DID
 * whose document dials the phone's extension: once straight to each node, once through the front. Then the node
 * that took the phone's REGISTER is SIGKILLed and declared gone, and the carrier calls each survivor and the front
 * again. baresip is told to accept each call as it rings. Prints one JSON line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nextPort, nextPorts } from '../../support/ports.js';
import { eventually } from '../../support/wait.js';
import { baresipCommand, exitOf, phoneUser, spawnBaresip } from '../support/baresip.js';
import { Cluster } from '../support/cluster.js';
import { runSipp, SCENARIOS } from '../support/harness.js';
import { KamailioFront } from '../support/kamailio-front.js';

const FRONT_HOST = '127.0.0.2';
const CARRIER_HOST = '127.0.0.1';
const DID = '+254711600101';
/** How long the carrier stays on each answered call before it hangs up (ms). */
const CALL_MS = 3000;

/** One call of the carrier, as the report gives it. */
export interface PhoneCall {
  /** Where the carrier sent the INVITE: a node's id, or `front`. */
  via: string;
  /** The carrier's exit code (0: answered, and its BYE got a 200). */
  carrierExit: number | null;
  /** The node that took the call (its CDR's node_id). */
  node?: string;
  /** The carrier's call as the store has it once ended. */
  inbound?: { status: string; reason_code: string | null };
  /** The Dial's outcome as its status callback (DIAL.0300) reported it. */
  dial?: { status?: string; seconds?: number };
  /** Calls baresip reported established during this one. */
  established: number;
  carrierOutput?: string;
}

export interface FrontPhoneReport {
  /** The node that took the REGISTER, and the Path it stored. */
  registeredOn?: string;
  path?: string | null;
  transport?: string;
  before: PhoneCall[];
  /** The registering node's state in the store after its SIGKILL (gone). */
  victimState?: string;
  /** Its binding as the store has it after (unreachable_at stays null: the front holds the connection). */
  unreachableAfter?: string | null;
  after: PhoneCall[];
  /** TCP connections the phone holds with the front at the end; connections anyone opened to its listening port. */
  phoneConnections: number;
  connectionsToPhone: number;
  error?: string;
  phoneLog: string;
  frontLog: string;
  nodeLogs?: string[];
  dialEvents?: string[];
}

const report: FrontPhoneReport = {
  before: [],
  after: [],
  phoneConnections: 0,
  connectionsToPhone: 0,
  phoneLog: '',
  frontLog: '',
};
const work = mkdtempSync(path.join(os.tmpdir(), 'simu-front-phone-'));
const cluster = await Cluster.start('front_phone', {
  env: { SIMU_SIP_TRUSTED_FRONTS: FRONT_HOST, SIMU_NODE_GONE_AFTER_SECONDS: '4' },
  rtpPorts: 40,
});
const front = await KamailioFront.start({
  host: FRONT_HOST,
  port: nextPort(),
  nodePorts: cluster.nodes.map((n) => n.ports.sip),
});
let phone: ReturnType<typeof spawnBaresip> | undefined;
let answering: NodeJS.Timeout | undefined;
let syns: ChildProcess | undefined;
let opened = 0;
try {
  const acct = await cluster.account(DID, { voicePath: '/dial' });
  const who = await phoneUser(cluster.node(1), acct, 'front-phone@example.com');
  cluster.server.verbs('/dial', `<Response><Dial timeout="15"><Extension>${who.ext}</Extension></Dial></Response>`);
  phone = spawnBaresip({
    work,
    name: 'tcp-phone',
    phone: {
      ...who,
      domain: `${acct.id}.sip.simu.test`,
      switchHost: FRONT_HOST,
      switchPort: front.o.port,
      transport: 'tcp',
    },
    seconds: 300,
    ctrl: true,
  });
  const p = phone;
  // Every connection anyone opens to the phone's listening port (a SYN without ACK): requests to the phone must go
  // down the connection it opened itself, which the front holds.
  syns = spawn(
    'tcpdump',
    [
      '-i',
      'lo',
      '-l',
      '-n',
      `tcp dst port ${p.sipPort} and tcp[tcpflags] & tcp-syn != 0 and tcp[tcpflags] & tcp-ack == 0`,
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  syns.stdout!.on(
    'data',
    (d) =>
      (opened += String(d)
        .split('\n')
        .filter((l) => l.includes(' > ')).length),
  );
  // baresip 1.0.0's answermode=auto does not answer here: each call is accepted over ctrl_tcp as it rings.
  let rung = 0;
  answering = setInterval(() => {
    const now = (p.log.match(/Incoming call/g) ?? []).length;
    if (now > rung) {
      rung = now;
      void baresipCommand(p.ctrl, 'accept');
    }
  }, 100);

  const binding = await eventually(
    async () => (await cluster.db('registrations').where({ end_user_id: who.uuid }).first()) ?? undefined,
    `the phone's binding in the store:\n${p.log}`,
    20000,
  );
  report.registeredOn = binding.node_id;
  report.path = binding.path;
  report.transport = binding.transport;

  /** The carrier calls the DID at `to` (a node's SIP port or the front); what became of the call. */
  const call = async (via: string, host: string, port: number): Promise<PhoneCall> => {
    const since = new Date().toISOString();
    const established = (p.log.match(/Call established/gi) ?? []).length;
    const sipp = runSipp(
      [
        `${host}:${port}`,
        ...[
          '-sf',
          path.join(SCENARIOS, 'uac-front.xml'),
          '-s',
          DID.slice(1),
          '-key',
          'media_sink',
          String(nextPorts(2)),
        ],
        ...['-i', CARRIER_HOST, '-p', String(nextPort()), '-m', '1', '-d', String(CALL_MS), '-recv_timeout', '20000'],
      ],
      { limitMs: 40_000 },
    );
    const out: PhoneCall = { via, carrierExit: await sipp.exited, established: 0 };
    out.established = (p.log.match(/Call established/gi) ?? []).length - established;
    if (out.carrierExit !== 0) out.carrierOutput = sipp.output().slice(-2000);
    const inbound = await eventually(
      async () => {
        const r = await cluster
          .db('calls')
          .where({ account_id: acct.id, direction: 'inbound' })
          .whereNull('parent_call_id')
          .where('created_at', '>=', since)
          .first();
        return r?.ended_at ? r : undefined;
      },
      `the call through ${via} ended`,
      15000,
    ).catch(() => undefined);
    if (inbound) {
      out.node = inbound.node_id;
      out.inbound = { status: inbound.status, reason_code: inbound.reason_code };
      const dial = await eventually(
        () => cluster.callbacks(inbound.sid, 'DIAL.0300')[0],
        `the Dial of the call through ${via} reported`,
        5000,
      ).catch(() => undefined);
      const data = dial?.json?.data as { DialCallStatus?: string; DialCallDuration?: number } | undefined;
      out.dial = { status: data?.DialCallStatus, seconds: data?.DialCallDuration };
    }
    return out;
  };

  for (const n of cluster.nodes) report.before.push(await call(n.id, '127.0.0.1', n.ports.sip));
  report.before.push(await call('front', FRONT_HOST, front.o.port));

  const victim = cluster.nodes.find((n) => n.id === report.registeredOn);
  if (!victim) throw new Error(`no node took the REGISTER: ${JSON.stringify(binding)}`);
  await cluster.kill(victim);
  await eventually(
    async () => !(await front.activeNodes()).includes(victim.ports.sip),
    'the front drops the dead node',
  );
  report.victimState = await eventually(
    async () => (await cluster.listing()).find((l) => l.id === victim.id && l.state === 'gone')?.state,
    `${victim.id} declared gone`,
    30000,
  );
  await new Promise((r) => setTimeout(r, 1000)); // the survivors act on it
  report.unreachableAfter = (await cluster.db('registrations').where({ end_user_id: who.uuid }).first())
    ?.unreachable_at;
  for (const n of cluster.nodes.filter((x) => x !== victim))
    report.after.push(await call(n.id, '127.0.0.1', n.ports.sip));
  // Round robin over the two survivors: both take one.
  report.after.push(await call('front', FRONT_HOST, front.o.port));
  report.after.push(await call('front', FRONT_HOST, front.o.port));
  report.phoneConnections = tcpConnections({ remote: [FRONT_HOST, front.o.port] });
  await new Promise((r) => setTimeout(r, 500)); // tcpdump's last lines
  report.connectionsToPhone = opened;
} catch (e) {
  report.error = e instanceof Error ? e.stack : String(e);
} finally {
  clearInterval(answering);
  syns?.kill('SIGKILL');
  if (phone) {
    phone.child.kill('SIGTERM');
    await exitOf(phone, 5000);
    report.phoneLog = phone.log.slice(-6000);
  }
  report.frontLog = front.log.slice(-3000);
  report.dialEvents = cluster.server.requests
    .filter((q) => q.url === '/status' && String(q.json?.code ?? '').startsWith('DIAL'))
    .map((q) => JSON.stringify(q.json));
  report.nodeLogs = cluster.nodes.map((n) =>
    (n.sw?.output() ?? '')
      .split('\n')
      .filter((l) => /"level":(40|50|60)/.test(l))
      .slice(-20)
      .join('\n'),
  );
  front.stop();
  await cluster.stop();
}
console.log(JSON.stringify(report));
process.exit(0);

/** Established TCP connections with the given local or remote address, from /proc/net/tcp. */
function tcpConnections(o: { local?: [string, number]; remote?: [string, number] }): number {
  const hex = ([ip, port]: [string, number]) =>
    `${ip
      .split('.')
      .reverse()
      .map((b) => Number(b).toString(16).toUpperCase().padStart(2, '0'))
      .join('')}:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .filter((line) => {
      const cols = line.trim().split(/\s+/);
      if (cols[3] !== '01') return false;
      return (!o.local || cols[1] === hex(o.local)) && (!o.remote || cols[2] === hex(o.remote));
    }).length;
}
