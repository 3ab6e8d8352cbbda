import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { nextPort } from '../../support/ports.js';
import { eventually } from '../../support/wait.js';
import { allocateSwitchPorts } from '../support/harness.js';
import { startSwitch, pidsMatching, type SwitchProcess } from '../support/switch-process.js';

function options(host: string, port: number, transport: 'UDP' | 'TLS', n: number): string {
  const tag = `reload${n}`;
  return [
    `OPTIONS sip:${host}:${port} SIP/2.0`,
    `Via: SIP/2.0/${transport} 127.0.0.1:5999;branch=z9hG4bK${tag}${Date.now()};rport`,
    'Max-Forwards: 70',
    `From: <sip:probe@127.0.0.1>;tag=${tag}`,
    `To: <sip:${host}:${port}>`,
    `Call-ID: ${tag}-${Date.now()}@reload`,
    `CSeq: ${n} OPTIONS`,
    'Content-Length: 0',
    '',
    '',
  ].join('\r\n');
}

function tlsConnect(port: number): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Answers to `count` OPTIONS sent at once over UDP from one socket, within 1.5 s. */
async function udpAnswers(port: number, count: number): Promise<number> {
  const socket = createSocket('udp4');
  let answers = 0;
  socket.on('message', (m) => void (m.toString('latin1').startsWith('SIP/2.0 ') && answers++));
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()));
  for (let i = 0; i < count; i++) socket.send(options('127.0.0.1', port, 'UDP', i + 1), port, '127.0.0.1');
  await new Promise((r) => setTimeout(r, 1500));
  socket.close();
  return answers;
}

/** `systemctl reload`: SIGHUP re-reads the configuration file; what cannot change live is named and kept. */
describe('e2e: SIGHUP reloads the configuration', function () {
  this.timeout(90000);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-reload-'));
  const PORTS = allocateSwitchPorts();
  const TLS_PORT = nextPort();
  const configFile = path.join(dir, 'simu.config.json');
  let sw: SwitchProcess | undefined;

  const certificate = (name: string) => {
    const cert = path.join(dir, `${name}.crt`);
    const key = path.join(dir, `${name}.key`);
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '30',
        '-keyout',
        key,
        '-out',
        cert,
        '-subj',
        `/CN=${name}`,
      ],
      { stdio: 'ignore' },
    );
    return { tlsCert: cert, tlsKey: key };
  };

  after(async () => {
    await sw?.stop('SIGKILL');
    for (const pid of pidsMatching(`rtpengine.*--listen-ng=127.0.0.1:${PORTS.ng}( |$)`)) process.kill(pid, 'SIGKILL');
  });

  it('a renewed certificate for new TLS connections, open ones kept; new flood limits; other changes refused', async () => {
    const a = certificate('a.example.net');
    const b = certificate('b.example.net');
    writeFileSync(configFile, JSON.stringify({ logLevel: 'warn', sip: a, security: { floodMaxRequests: 30 } }));
    sw = await startSwitch({
      SIMU_CONFIG: configFile,
      SIMU_DATA_DIR: path.join(dir, 'data'),
      SIMU_HTTP_HOST: '127.0.0.1',
      SIMU_HTTP_PORT: String(PORTS.http),
      SIMU_SIP_HOST: '127.0.0.1',
      SIMU_SIP_PORT: String(PORTS.sip),
      SIMU_SIP_TLS_PORT: String(TLS_PORT),
      SIMU_SIP_WS_PORT: '0',
      SIMU_SIP_WSS_PORT: '0',
      SIMU_RTPENGINE_NG_PORT: String(PORTS.ng),
      SIMU_RTPENGINE_DTMF_PORT: String(PORTS.dtmf),
      SIMU_RTP_PORT_MIN: String(PORTS.rtpMin),
      SIMU_RTP_PORT_MAX: String(PORTS.rtpMax),
    });
    const before = await tlsConnect(TLS_PORT);
    assert.equal(before.getPeerCertificate().subject.CN, 'a.example.net');
    assert.equal(await udpAnswers(PORTS.sip, 10), 10, 'ten requests are no flood at 30');

    writeFileSync(
      configFile,
      JSON.stringify({ logLevel: 'warn', sip: b, security: { floodMaxRequests: 5 }, webhooks: { timeoutMs: 5000 } }),
    );
    sw.proc.kill('SIGHUP');
    await eventually(() => sw!.output().includes('configuration reloaded'), 'the reload', 5000);
    assert.match(sw.output(), /"refused":\["webhooks\.timeoutMs"\].*change only with a restart/);

    const after = await tlsConnect(TLS_PORT);
    assert.equal(after.getPeerCertificate().subject.CN, 'b.example.net');
    after.destroy();
    // The connection opened before the reload goes on with its certificate.
    const answer = new Promise<string>((resolve) => before.once('data', (d) => resolve(d.toString('latin1'))));
    before.write(options('127.0.0.1', TLS_PORT, 'TLS', 1));
    assert.match(await answer, /^SIP\/2\.0 200 /);
    assert.equal(before.getPeerCertificate().subject.CN, 'a.example.net');
    before.destroy();

    const answered = await udpAnswers(PORTS.sip, 10);
    assert.ok(answered <= 6, `a flood at the new limit of 5: ${answered} of 10 answered`);
  });

  it('a configuration that does not load is refused and the switch goes on', async () => {
    writeFileSync(configFile, '{ "logLevel": ');
    sw!.proc.kill('SIGHUP');
    await eventually(() => sw!.output().includes('reload refused'), 'the refusal', 5000);
    assert.equal((await fetch(`${sw!.baseUrl}/api/health/`)).status, 200);
  });
});
