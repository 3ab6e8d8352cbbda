import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UserAgent, type Dialog } from '../../../sip/stack/index.js';
import { audioEndpoint, buildRtp, plainAudioSdp } from '../../../media/index.js';
import { RtpSink, speechUlawFile } from './harness.js';
import { ensureSipCertificate } from '../../../sip/index.js';

/** Real speech as raw mu-law, made with espeak-ng and sox. */
export function speechUlaw(text: string): Buffer {
  return readFileSync(speechUlawFile(text));
}

/**
 * A softphone built on our own SIP stack: registers with a phone token (Bearer, RFC 8898), places and answers
 * calls, and has a real RTP socket that keeps what it hears and can speak a mu-law clip.
 */
export class TestPhone {
  readonly ua: UserAgent;
  /** 'tls': signalling over TLS (self-signed switch certificate accepted) and SRTP media offered with SDES keys. */
  transport: 'udp' | 'tls' = 'udp';
  readonly sink = new RtpSink();
  dialog: Dialog | undefined;
  readonly domain: string;

  constructor(
    readonly ext: string,
    readonly token: string,
    accountId: string,
    readonly sipPort: number,
    readonly mediaPort: number,
    readonly switchPort: number,
    transport: 'udp' | 'tls' = 'udp',
  ) {
    this.domain = `${accountId}.sip.test`;
    this.transport = transport;
    this.ua = new UserAgent(transport === 'tls' ? { tls: { rejectUnauthorized: false } } : {});
  }

  get proxy(): string {
    return `127.0.0.1:${this.switchPort}${this.transport === 'tls' ? ';transport=tls' : ''}`;
  }

  get sdp(): string {
    const plain = plainAudioSdp({ address: '127.0.0.1', port: this.mediaPort, codecs: ['PCMU'] });
    if (this.transport === 'udp') return plain;
    // RFC 4568 SDES: a 30-byte master key and salt, base64, offered on RTP/SAVP.
    const key = Buffer.alloc(30, 7).toString('base64');
    return plain.replace('RTP/AVP', 'RTP/SAVP').trimEnd() + `\r\na=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:${key}\r\n`;
  }

  async start(): Promise<this> {
    if (this.transport === 'udp') await this.ua.listen({ udp: { host: '127.0.0.1', port: this.sipPort } });
    else {
      // The stack sends TLS only with a TLS transport of its own; the switch still reaches the phone over the
      // connection it registered on.
      const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-phone-tls-'));
      const cert = ensureSipCertificate({ dataDir: dir, cert: '', key: '', host: '127.0.0.1' });
      await this.ua.listen({ tls: { host: '127.0.0.1', port: this.sipPort, ...cert } });
    }
    await this.sink.bind(this.mediaPort);
    return this;
  }

  async register(): Promise<number> {
    const aor = `<sip:${this.ext}@${this.domain}>`;
    const res = await this.ua.request(`sip:${this.domain}`, {
      method: 'REGISTER',
      from: aor,
      to: aor,
      proxy: this.proxy,
      headers: {
        Authorization: `Bearer ${this.token}`,
        Contact: `<sip:${this.ext}@127.0.0.1:${this.sipPort}${this.transport === 'tls' ? ';transport=tls' : ''}>`,
        Expires: '300',
      },
    });
    return res.status;
  }

  /** Answers the next INVITE after a short ring. */
  answerNext(ringMs = 200): Promise<Dialog> {
    return new Promise((resolve) => {
      this.ua.onRequest('INVITE', async (req, srv) => {
        if (process.env.DEBUG_PHONE) console.error('PHONE got INVITE', this.ext);
        srv.send(180, 'Ringing');
        await new Promise((r) => setTimeout(r, ringMs));
        this.dialog = await this.ua.createUAS(req, { localSdp: this.sdp });
        resolve(this.dialog);
      });
    });
  }

  call(target: string): Promise<Dialog> {
    return this.ua
      .createUAC(`sip:${target}@${this.domain}`, {
        localSdp: this.sdp,
        from: `<sip:${this.ext}@${this.domain}>`,
        proxy: this.proxy,
        headers: { Authorization: `Bearer ${this.token}` },
      })
      .then((d) => (this.dialog = d));
  }

  /** Sends a mu-law clip as 20 ms PCMU packets to the far end of the current dialog. */
  async speak(ulaw: Buffer): Promise<void> {
    const far = audioEndpoint(this.dialog?.remoteSdp ?? '');
    if (!far) throw new Error('no remote media address');
    const ssrc = 0x5150;
    for (let i = 0, seq = 0; i + 160 <= ulaw.length; i += 160, seq++) {
      const pkt = buildRtp({
        payloadType: 0,
        sequence: seq,
        timestamp: seq * 160,
        ssrc,
        payload: ulaw.subarray(i, i + 160),
      });
      this.sink.socket.send(pkt, far.port, far.address);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async close(): Promise<void> {
    this.sink.close();
    await this.ua.close();
  }
}
