/**
 * The minimal answering application the call benchmark measures: every INVITE is answered 200 with SDP,
 * ACKed, and ended by the caller's BYE. Listens on UDP 127.0.0.1:$PORT (default 17060); stops on SIGTERM.
 */
import { UserAgent } from '../../sip/stack/index.js';

const port = Number(process.env.PORT ?? 17060);
const SDP =
  'v=0\r\no=simu 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 17500 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n';

const ua = new UserAgent();
await ua.listen({ udp: { host: '127.0.0.1', port } });
ua.onRequest('INVITE', async (req) => {
  await ua.createUAS(req, { localSdp: SDP }).catch(() => undefined);
});
if (process.env.STATS) {
  setInterval(() => {
    (globalThis as { gc?: () => void }).gc?.();
    const m = process.memoryUsage();
    process.stderr.write(
      `stats ${JSON.stringify({ ...ua.stats(), heapMB: Math.round(m.heapUsed / 1e6), rssMB: Math.round(m.rss / 1e6) })}\n`,
    );
  }, 5000).unref();
}
process.on('SIGTERM', () => {
  void ua.close().then(() => process.exit(0));
});
process.stdout.write(`ready ${port}\n`);
