/** Shared set-up for the stack's network tests: agents on loopback, closed after each test. */
import { execFileSync } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UserAgent, type UserAgentOptions } from '../../../sip/stack/index.js';

export const SDP_A =
  'v=0\r\no=a 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 16000 RTP/AVP 0\r\n';
export const SDP_B =
  'v=0\r\no=b 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 16002 RTP/AVP 0\r\n';

export class Agents {
  readonly list: UserAgent[] = [];
  async make(opts: UserAgentOptions = {}, listen = { udp: true, tcp: true }): Promise<UserAgent> {
    const ua = new UserAgent({ timers: { T1: 100 }, ...opts });
    this.list.push(ua);
    await ua.listen({
      udp: listen.udp ? { host: '127.0.0.1', port: 0 } : undefined,
      tcp: listen.tcp ? { host: '127.0.0.1', port: 0 } : undefined,
    });
    return ua;
  }
  async closeAll(): Promise<void> {
    await Promise.all(this.list.splice(0).map((u) => u.close()));
  }
}

export function uriOf(ua: UserAgent, transport: 'UDP' | 'TCP' = 'UDP', user = 'bob'): string {
  const a = ua.address(transport)!;
  return `sip:${user}@${a.host}:${a.port}${transport === 'TCP' ? ';transport=tcp' : ''}`;
}

/** A self-signed certificate for 127.0.0.1 made with the openssl CLI, for development and tests. */
export function selfSignedCert(): { cert: string; key: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sip-tls-'));
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
}

export function waitFor<T>(register: (resolve: (v: T) => void) => void, ms = 3000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timed out waiting')), ms);
    register((v) => {
      clearTimeout(t);
      resolve(v);
    });
  });
}

/** Sends raw bytes over UDP from a fresh socket and resolves with the first datagram that comes back. */
export function rawUdp(port: number, text: string | Buffer, ms = 2000): Promise<string> {
  const sock = dgram.createSocket('udp4');
  return new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => {
      sock.close();
      reject(new Error('no answer'));
    }, ms);
    sock.on('message', (m) => {
      clearTimeout(t);
      sock.close();
      resolve(m.toString());
    });
    sock.bind(0, '127.0.0.1', () => {
      const port0 = sock.address().port;
      const data = typeof text === 'string' ? Buffer.from(text.replaceAll('{port}', String(port0))) : text;
      sock.send(data, port, '127.0.0.1');
    });
  });
}
