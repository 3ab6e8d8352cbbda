import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { readWav } from '../../../media/index.js';
import { api, speechSecondsOf } from '../support/harness.js';
import { useCarrierSwitch } from '../support/carrier-switch.js';

/**
 * Issue 22, item 1 "done when": a verb document Plays a URL ending in .m3u (a playlist served as audio/x-mpegurl by
 * a local server) to a real SIPp carrier's call through the real switch and real sox. The playlist's
 * `http://x/$(touch marker)` entry runs no command, its absolute path to a WAV on this machine is not played,
 * PLAY.0404 is recorded with the URL, and the call goes on to the next verb, whose Say the caller hears. A control
 * call proves the fetch itself works here: real audio under a .m3u URL is decided by its bytes and played.
 */
describe('e2e: <Play> of a playlist URL is refused, runs nothing, plays nothing, and the call goes on', function () {
  this.timeout(60000);
  const DID = '+254711290001';
  const t = useCarrierSwitch({
    did: DID,
    statusWebhook: false,
    // The audio server is on loopback; the SSRF guard refuses that unless told (issue 22, engineer B).
    env: { SIMU_WEBHOOK_ALLOW_PRIVATE: 'true' },
  });
  const { server } = t;
  let media: Server;
  let mediaBase: string;
  let dir: string;
  let marker: string;
  let secretSpeech: number;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'simu-e2e-play-url-'));
    marker = path.join(dir, `pwned-${process.pid}`);
    // Another tenant's recording, on this machine: several seconds of speech the caller must not hear.
    // (8 kHz mono like the switch's own recordings, so its speech is measured on the same scale as what is heard.)
    const spoken = path.join(dir, 'spoken.wav');
    const secret = path.join(dir, 'other-tenant-recording.wav');
    execFileSync('espeak-ng', [
      '-w',
      spoken,
      'This is a private recording of another account. Nobody else should ever hear these words played.',
    ]);
    execFileSync('sox', ['-t', 'wav', spoken, '-r', '8000', '-c', '1', '-b', '16', secret]);
    secretSpeech = speechSecondsOf((await readWav(secret)).samples);
    assert.ok(secretSpeech > 3, `the private recording holds ${secretSpeech} s of speech`);
    const playlists: Record<string, string> = {
      '/hold.m3u': `#EXTM3U\nhttp://x/$(touch ${marker}).wav\n${secret}\n`,
      '/music.m3u': `${secret}\n`,
    };
    const audio: Record<string, Buffer> = { '/greeting.m3u': readFileSync(secret) };
    media = createServer((req, res) => {
      const body = playlists[req.url ?? ''] ?? audio[req.url ?? ''];
      if (body === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'audio/x-mpegurl' });
      res.end(body);
    });
    await new Promise<void>((r) => media.listen(0, '127.0.0.1', () => r()));
    mediaBase = `http://127.0.0.1:${(media.address() as AddressInfo).port}`;
  });

  after(() => {
    media?.closeAllConnections();
    media?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function callWithDocument(route: string, playUrl: string) {
    server.verbs(route, `<Response><Play>${playUrl}</Play><Say>The music is not available.</Say><Hangup/></Response>`);
    await t.setInboundUrl(server.url(route));
    t.sipp = t.carrierCalls();
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const call = (await api(t.ctx.baseUrl, t.acct.key, 'GET', '/api/calls/?limit=1')).body.calls[0];
    assert.equal(call.status, 'completed');
    const rows = await t.ctx.db('call_events').where({ call_id: call.uuid }).orderBy('created_at');
    return rows.map((r) => ({ code: r.code as string, data: JSON.parse(r.data) }));
  }

  function assertRefusedAndWentOn(events: { code: string; data: any }[], url: string): void {
    const codes = events.map((e) => e.code).join(',');
    const refused = events.find((e) => e.code === 'PLAY.0404');
    assert.ok(refused, `PLAY.0404 among ${codes}`);
    assert.equal(refused.data.url, url);
    assert.ok(
      events.some((e) => e.code.startsWith('TTS')),
      `the Say after the Play ran: ${codes}`,
    );
    const heard = t.sink.speechSeconds();
    assert.ok(heard >= 1, `the Say was heard: ${heard} s`);
    assert.ok(heard < secretSpeech * 0.8, `heard ${heard} s: not the ${secretSpeech} s private recording`);
  }

  it('control: real audio served under a .m3u URL is fetched (through the SSRF guard) and heard in full', async () => {
    const url = `${mediaBase}/greeting.m3u`;
    const events = await callWithDocument('/greeting', url);
    assert.ok(!events.some((e) => e.code === 'PLAY.0404'), events.map((e) => e.code).join(','));
    const heard = t.sink.speechSeconds();
    assert.ok(heard >= secretSpeech * 0.8, `heard ${heard} s of the ${secretSpeech} s served`);
  });

  it('a .m3u with a $(touch) http entry: no command runs, PLAY.0404, and the next verb is heard', async () => {
    const url = `${mediaBase}/hold.m3u`;
    const events = await callWithDocument('/hold', url);
    assertRefusedAndWentOn(events, url);
    assert.equal(existsSync(marker), false, 'the playlist entry ran a shell command');
  });

  it("a .m3u naming another tenant's WAV by absolute path: it is not played to the caller", async () => {
    const url = `${mediaBase}/music.m3u`;
    const events = await callWithDocument('/music', url);
    assertRefusedAndWentOn(events, url);
  });
});
