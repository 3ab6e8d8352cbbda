/** Parser throughput: a typical INVITE with SDP parsed (and its core headers read) repeatedly for ~2 s. */
import { parseMessage, SipRequest } from '../../sip/stack/index.js';

const sdp = 'v=0\r\no=a 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 6000 RTP/AVP 0\r\n';
export const INVITE = Buffer.from(
  'INVITE sip:service@127.0.0.1:5060 SIP/2.0\r\n' +
    'Via: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-1234-1-0\r\n' +
    'From: sipp <sip:sipp@127.0.0.1:5061>;tag=1234SIPpTag001\r\n' +
    'To: service <sip:service@127.0.0.1:5060>\r\n' +
    'Call-ID: 1-1234@127.0.0.1\r\n' +
    'CSeq: 1 INVITE\r\n' +
    'Contact: sip:sipp@127.0.0.1:5061\r\n' +
    'Max-Forwards: 70\r\n' +
    'Subject: Performance Test\r\n' +
    'Content-Type: application/sdp\r\n' +
    `Content-Length: ${sdp.length}\r\n\r\n${sdp}`,
);

/** Messages per second over `ms` of parsing, with the fields a transaction needs read each time. */
export function parserRate(ms = 2000): number {
  let n = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    for (let i = 0; i < 1000; i++) {
      const r = parseMessage(INVITE);
      if (!r.ok || !(r.message instanceof SipRequest) || !r.message.topVia || !r.message.callId)
        throw new Error('parse');
      n++;
    }
  }
  return Math.round(n / (ms / 1000));
}
