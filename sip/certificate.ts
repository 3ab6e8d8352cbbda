import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The certificate and key for SIP over TLS and WSS: the configured PEM files, or a self-signed pair made once
 * with openssl in the data directory. Browsers refuse a self-signed WSS certificate unless the user accepted it
 * (or the browser was told to ignore errors, as the tests do); production sets sip.tlsCert / sip.tlsKey.
 */
export function ensureSipCertificate(opts: { dataDir: string; cert: string; key: string; host: string }): {
  cert: string;
  key: string;
} {
  if (opts.cert && opts.key) return { cert: readFileSync(opts.cert, 'utf8'), key: readFileSync(opts.key, 'utf8') };
  const certFile = path.join(opts.dataDir, 'sip-selfsigned.crt');
  const keyFile = path.join(opts.dataDir, 'sip-selfsigned.key');
  if (!existsSync(certFile) || !existsSync(keyFile)) {
    const san = /^[\d.]+$|:/.test(opts.host) ? `IP:${opts.host}` : `DNS:${opts.host}`;
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '825',
        '-keyout',
        keyFile,
        '-out',
        certFile,
        '-subj',
        `/CN=${opts.host}`,
        '-addext',
        `subjectAltName=${san},IP:127.0.0.1`,
      ],
      { stdio: 'ignore' },
    );
  }
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}
