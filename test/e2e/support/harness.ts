import dgram from 'node:dgram';
import http from 'node:http';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../../../config/index.js';
import { Switch } from '../../../switch.js';
import { insertAccount, insertApiKey, insertTrunk, newId, nowIso, setRate, type Db } from '../../../store/index.js';
import { post } from '../../../billing/index.js';
import { decodeG711, rms } from '../../../media/g711.js';
import { parseRtp } from '../../../media/rtp-packet.js';
import { nextPort, portRange } from '../../support/ports.js';
import { runSipp } from '../../support/sipp.js';
import { eventually } from '../../support/wait.js';

export const SCENARIOS = path.join(import.meta.dirname, 'scenarios');

/** The ports of a test switch; startTestSwitch allocates those not given from this run's block. */
export interface SwitchPorts {
  http: number;
  sip: number;
  ng: number;
  /** rtpengine's DTMF event socket. */
  dtmf: number;
  rtpMin: number;
  rtpMax: number;
}

/** Ports for one test switch from this run's block (test/support/ports.ts): four single ports and 100 for RTP. */
export function allocateSwitchPorts(given: Partial<SwitchPorts> = {}): SwitchPorts {
  const rtp = given.rtpMin !== undefined && given.rtpMax !== undefined ? undefined : portRange(100);
  return {
    http: given.http ?? nextPort(),
    sip: given.sip ?? nextPort(),
    ng: given.ng ?? nextPort(),
    dtmf: given.dtmf ?? nextPort(),
    rtpMin: given.rtpMin ?? rtp!.min,
    rtpMax: given.rtpMax ?? rtp!.max,
  };
}

/**
 * The whole switch in this process, with its own data directory; ports not given are allocated from this run's
 * block and all are returned as `ports`.
 */
export async function startTestSwitch(
  options: Partial<SwitchPorts> & {
    /** SIP over WebSocket ports; 0 (the default here) leaves those transports off. */
    ws?: number;
    wss?: number;
    /** SIP over TLS; 0 (the default here) leaves it off. */
    tls?: number;
    /** Extra settings (SIMU_* variables). */
    env?: Record<string, string>;
  } = {},
) {
  const ports = { ...options, ...allocateSwitchPorts(options) };
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'simu-e2e-'));
  const config: Config = loadConfig(
    {
      SIMU_DATA_DIR: dataDir,
      SIMU_HTTP_HOST: '127.0.0.1',
      SIMU_HTTP_PORT: String(ports.http),
      SIMU_SIP_HOST: '127.0.0.1',
      SIMU_SIP_PORT: String(ports.sip),
      SIMU_SIP_WS_PORT: String(ports.ws ?? 0),
      SIMU_SIP_WSS_PORT: String(ports.wss ?? 0),
      SIMU_SIP_TLS_PORT: String(ports.tls ?? 0),
      SIMU_RTPENGINE_NG_PORT: String(ports.ng),
      SIMU_RTPENGINE_DTMF_PORT: String(ports.dtmf),
      SIMU_RTP_PORT_MIN: String(ports.rtpMin),
      SIMU_RTP_PORT_MAX: String(ports.rtpMax),
      SIMU_WEBHOOK_TIMEOUT_MS: '3000',
      SIMU_LOG_LEVEL: process.env.SIMU_LOG_LEVEL ?? 'silent',
      // The e2e tests poll the API; they are not about the per-key rate limit (test/api/abuse.test.ts is).
      SIMU_API_RATE_PER_SECOND: '100000',
      SIMU_API_RATE_BURST: '100000',
      // Nor about overload control (test/e2e/operations/overload.test.ts is): a test box busy with other suites must not
      // see its few calls shed.
      SIMU_OVERLOAD_LOOP_DELAY_MS: '10000',
      SIMU_OVERLOAD_STORE_WAIT_MS: '10000',
      SIMU_OVERLOAD_INITIAL_CPS: '0',
      SIMU_API_ACCOUNT_RATE_PER_SECOND: '100000',
      SIMU_API_ACCOUNT_RATE_BURST: '100000',
      // The tests' webhook and audio servers listen on 127.0.0.1: the operator's opt-in (docs/security.md).
      SIMU_WEBHOOK_ALLOW_PRIVATE: 'true',
      ...ports.env,
    },
    dataDir,
  );
  const sw = new Switch(config);
  await sw.start();
  // Every call this switch ended is checked when the test stops it: a CDR's talk time never exceeds its duration.
  const stop = sw.stop.bind(sw);
  let checked = false;
  sw.stop = async () => {
    const wrong = checked ? [] : await cdrsTalkingPastTheirEnd(sw.db).catch(() => []);
    checked = true;
    await stop();
    if (wrong.length) throw new Error(`talk_seconds > duration_seconds on ended calls: ${JSON.stringify(wrong)}`);
  };
  // Rates for the tests' calls: 1.00 KES a minute anywhere outbound, 0.50 inbound, speech 0.01 a second.
  await setRate(sw.db, 'outbound', 100);
  await setRate(sw.db, 'inbound', 50);
  await setRate(sw.db, 'tts', 1);
  return { sw, config, db: sw.db, ports, baseUrl: `http://127.0.0.1:${ports.http}` };
}

/** Ended calls whose talk time exceeds their length (docs/api.md: neither may, whatever the instants). */
export async function cdrsTalkingPastTheirEnd(db: Db) {
  return db('calls')
    .whereIn('status', ['completed', 'failed'])
    .whereRaw('talk_seconds > duration_seconds')
    .select('sid', 'duration_seconds', 'talk_seconds', 'started_at', 'answered_at', 'ended_at');
}

export interface TestAccount {
  id: string;
  key: string;
  did: string;
}

/** An account with money, an API key and one active DID it owns. */
export async function createAccountWithDid(db: Db, did: string, balanceCents = 100_000): Promise<TestAccount> {
  const a = await insertAccount(db, `acct ${did}`);
  const { key } = await insertApiKey(db, a.id, 'test');
  await post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: balanceCents });
  await db('numbers').insert({
    id: newId(),
    number: did,
    account_id: a.id,
    is_active: true,
    acquired_at: nowIso(),
    created_at: nowIso(),
  });
  return { id: a.id, key, did };
}

/** A carrier trunk at 127.0.0.1:port (inbound from 127.0.0.1); the running switch sees it at once. */
export async function addCarrier(db: Db, port: number, name = 'carrier', sw?: Switch, inbound = ['127.0.0.1']) {
  const trunk = await insertTrunk(db, {
    name,
    host: '127.0.0.1',
    port,
    transport: 'udp',
    username: null,
    password: null,
    inbound_addresses: inbound,
  });
  await sw?.sip?.refreshTrustedAddresses(); // the carrier is matched and exempt from flood bans at once
  return trunk;
}

export interface ReceivedRequest {
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
  at: number;
}

/** The account's server: answers call-control requests with verb documents and records status callbacks. */
export class AccountServer {
  readonly requests: ReceivedRequest[] = [];
  #server: http.Server;
  #port = 0;
  routes = new Map<string, (req: ReceivedRequest) => { status?: number; body: string; delayMs?: number }>();

  constructor() {
    this.#server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const r: ReceivedRequest = {
          url: req.url ?? '',
          headers: req.headers,
          body,
          json: safeJson(body),
          at: Date.now(),
        };
        this.requests.push(r);
        const handler = this.routes.get((req.url ?? '').split('?')[0]);
        const reply = handler ? handler(r) : { status: 200, body: '' };
        setTimeout(() => {
          res.writeHead(reply.status ?? 200, {
            'content-type': reply.body.startsWith('<') ? 'application/xml' : 'text/plain',
          });
          res.end(reply.body);
        }, reply.delayMs ?? 0);
      });
    });
  }

  async listen(): Promise<this> {
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', () => r()));
    this.#port = (this.#server.address() as { port: number }).port;
    return this;
  }

  url(p: string): string {
    return `http://127.0.0.1:${this.#port}${p}`;
  }

  verbs(p: string, xml: string): void {
    this.routes.set(p, () => ({ body: xml }));
  }

  statusEvents(p = '/status'): string[] {
    return this.requests.filter((r) => r.url === p).map((r) => r.json?.code);
  }

  /** test/support/wait.ts eventually, with this class's older argument order. */
  async waitFor(pred: () => boolean, timeoutMs = 15000, what = 'condition'): Promise<void> {
    await eventually(pred, what, timeoutMs);
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((r) => this.#server.close(() => r()));
  }
}

function safeJson(s: string): any {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

/** A real RTP receiver: keeps the PCMU audio it is sent, to prove what a peer heard. */
export class RtpSink {
  readonly socket = dgram.createSocket('udp4');
  readonly payloads: Buffer[] = [];
  packets = 0;

  async bind(port: number): Promise<this> {
    this.socket.on('message', (msg) => {
      const p = parseRtp(msg);
      if (!p) return;
      this.packets++;
      if (p.payloadType === 0) this.payloads.push(Buffer.from(p.payload));
    });
    await new Promise<void>((r) => this.socket.bind(port, '127.0.0.1', () => r()));
    return this;
  }

  /** Seconds of received audio whose 20 ms frames are at speech level (RMS above `threshold`). */
  speechSeconds(threshold = 300): number {
    return speechSecondsOf(decodeG711(Buffer.concat(this.payloads), 0), threshold);
  }

  close(): void {
    this.socket.close();
  }
}

export { runSipp, type SippRun } from '../../support/sipp.js';

/** Seconds of 20 ms frames at speech level (RMS above `threshold`) in 8 kHz samples: what RtpSink counts as heard. */
export function speechSecondsOf(samples: Int16Array, threshold = 300): number {
  let loud = 0;
  for (let i = 0; i + 160 <= samples.length; i += 160) if (rms(samples, i, i + 160) > threshold) loud++;
  return loud * 0.02;
}

/**
 * A SIPp carrier calling `did` at the switch's SIP port `sip` from 127.0.0.1:`port`, one call by default, with
 * one of test/e2e/support/scenarios (uac-inbound.xml by default) or an absolute scenario path, its media aimed at `sink`.
 */
export function carrierCallsDid(o: {
  sip: number;
  did: string;
  port: number;
  sink: number;
  scenario?: string;
  calls?: number;
  extra?: string[];
}) {
  const scenario = o.scenario ?? 'uac-inbound.xml';
  return runSipp([
    `127.0.0.1:${o.sip}`,
    ...['-sf', path.isAbsolute(scenario) ? scenario : path.join(SCENARIOS, scenario)],
    ...['-key', 'media_sink', String(o.sink), '-s', o.did.replace(/^\+/, '')],
    ...['-i', '127.0.0.1', '-p', String(o.port), '-m', String(o.calls ?? 1)],
    ...(o.extra ?? []),
  ]);
}

/**
 * A SIPp carrier on 127.0.0.1:`port` taking `calls` calls with one of test/e2e/support/scenarios (uas-answer.xml by
 * default), its media aimed at `sink` (-key media_sink), plus `extra` SIPp arguments.
 */
export function carrier(o: { port: number; sink?: number; calls?: number; scenario?: string; extra?: string[] }) {
  const media = o.sink === undefined ? [] : ['-key', 'media_sink', String(o.sink)];
  return runSipp([
    '-sf',
    path.join(SCENARIOS, o.scenario ?? 'uas-answer.xml'),
    ...media,
    '-i',
    '127.0.0.1',
    '-p',
    String(o.port),
    '-m',
    String(o.calls ?? 1),
    ...(o.extra ?? []),
  ]);
}

export async function api(baseUrl: string, key: string, method: string, p: string, body?: unknown) {
  const res = await fetch(`${baseUrl}${p}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: safeJson(text) ?? text };
}

/** Real speech as a raw mu-law file (espeak-ng, then sox), for SIPp's rtp_stream or a TestPhone to speak. */
export function speechUlawFile(text: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-speech-'));
  const wav = path.join(dir, 's.wav');
  execFileSync('espeak-ng', ['-w', wav, text]);
  return ulawOf(wav);
}

/** A WAV converted to raw 8 kHz mu-law beside it: the same bytes every run (`-R` seeds sox's dither). */
export function ulawOf(wav: string): string {
  const ulaw = wav.replace(/\.wav$/, '') + '.ulaw';
  execFileSync('sox', ['-R', wav, '-r', '8000', '-c', '1', '-t', 'ul', ulaw]);
  return ulaw;
}

/**
 * The carrier scenario whose caller speaks `ulaw` once answered (scenarios/uac-inbound-speaks.xml). SIPp does not
 * expand keywords inside rtp_stream, so the file's path is written into a copy of the scenario.
 */
export function speakingCarrierScenario(ulaw: string): string {
  const file = path.join(path.dirname(ulaw), 'uac-inbound-speaks.xml');
  writeFileSync(
    file,
    readFileSync(path.join(SCENARIOS, 'uac-inbound-speaks.xml'), 'utf8').replaceAll('[speech]', ulaw),
  );
  return file;
}
