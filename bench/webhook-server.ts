import { spawn, type ChildProcess } from 'node:child_process';

/**
 * The customer's server, in its own process: answers every request with a Dial to the PSTN (a status callback's
 * reply body is ignored), and `/stats` with the requests it got by path and the TCP connections it accepted. With
 * `amd`, the Dial's number asks for answering machine detection, its verdict to `/amd` on the same server.
 */
export async function startWebhookServer(opts: { amd?: boolean } = {}): Promise<{
  url: string;
  statusUrl: string;
  statsUrl: string;
  proc: ChildProcess;
}> {
  const code = `
    const http = require('node:http');
    const amd = process.argv[1] === 'amd';
    let doc = '<Response><Dial timeout="10"><Number>+254722000001</Number></Dial></Response>';
    const byPath = {};
    let connections = 0;
    const s = http.createServer((req, res) => { req.resume(); req.on('end', () => {
      if (req.url === '/stats') return res.end(JSON.stringify({ connections, byPath }));
      byPath[req.url] = (byPath[req.url] || 0) + 1;
      res.writeHead(200, { 'content-type': 'application/xml' }); res.end(doc); }); });
    s.on('connection', () => connections++);
    s.keepAliveTimeout = 60000;
    s.listen(0, '127.0.0.1', () => {
      const port = s.address().port;
      if (amd) doc = '<Response><Dial timeout="10"><Number machineDetection="Enable" amdStatusCallback="http://127.0.0.1:' +
        port + '/amd">+254722000001</Number></Dial></Response>';
      console.log(port);
    });`;
  const proc = spawn(process.execPath, ['-e', code, opts.amd ? 'amd' : 'plain'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // The bench may end by a signal or a crash: the webhook server must not outlive it (it holds our stdout).
  process.once('exit', () => proc.kill());
  process.once('SIGTERM', () => process.exit(143));
  const port = await new Promise<string>((resolve) => proc.stdout!.once('data', (d) => resolve(String(d).trim())));
  const base = `http://127.0.0.1:${port}`;
  return { url: `${base}/voice`, statusUrl: `${base}/status`, statsUrl: `${base}/stats`, proc };
}
