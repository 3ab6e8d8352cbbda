import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import S3rver from 's3rver';
import { roomLogger } from '../../../config/index.js';
import { RecordingRetention, readWav } from '../../../media/index.js';
import {
  carrierCallsDid,
  startTestSwitch,
  createAccountWithDid,
  addCarrier,
  AccountServer,
  RtpSink,
  api,
  SCENARIOS,
  speakingCarrierScenario,
  ulawOf,
  type SippRun,
  type TestAccount,
  allocateSwitchPorts,
  speechSecondsOf,
} from '../support/harness.js';
import { useCarrierSwitch } from '../support/carrier-switch.js';
import { nextPort, nextPorts } from '../../support/ports.js';

// The S3 suite's switch and peers (the first suite has its own, test/e2e/support/carrier-switch.ts).
const PORTS = allocateSwitchPorts();
const SINK_2 = nextPort();
const CARRIER = nextPort(); // takes outbound legs
const CALLER = nextPort(); // SIPp delivering inbound calls
const CALLER_MEDIA = nextPorts(4); // a speaking caller's RTP (SIPp -mp)

/**
 * Issue 11 "done when": an uploaded asset (espeak-ng speech converted by sox to Ogg Vorbis, uploaded through the
 * API) is played by `<Play asset>` to a real SIPp caller; a deactivated asset gives PLAY.0404 and the next verb
 * runs; a real recording expired by the retention job loses its file and its download URL.
 */
describe('e2e: account assets played to a caller, and recording retention', function () {
  this.timeout(60000);
  const DID = '+254711280001';
  const t = useCarrierSwitch({ did: DID, statusWebhook: false });
  const { server } = t;
  let dir: string;
  let speaks: string;
  let assetSpeech: number;
  let assetUuid: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'simu-e2e-assets-'));
    const wav = path.join(dir, 'greeting.wav');
    execFileSync('espeak-ng', [
      '-w',
      wav,
      'Welcome to Simu. You are hearing an uploaded greeting, played from an asset.',
    ]);
    const ogg = path.join(dir, 'greeting.ogg');
    execFileSync('sox', [wav, ogg]);
    const up = await fetch(`${t.ctx.baseUrl}/api/assets/upload?name=greeting`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.acct.key}`, 'content-type': 'audio/ogg' },
      body: new Uint8Array(readFileSync(ogg)),
    });
    const asset = await up.json();
    assert.equal(up.status, 201, JSON.stringify(asset));
    assert.equal(asset.original_format, 'ogg');
    assetUuid = asset.uuid;
    const stored = path.join(t.ctx.config.dataDir, 'assets', t.acct.id, `${asset.uuid}.wav`);
    assetSpeech = speechSecondsOf((await readWav(stored)).samples);
    assert.ok(assetSpeech > 1.5, `the asset holds ${assetSpeech} s of speech`);
    // The caller of the Record test speaks real speech (raw mu-law for SIPp's rtp_stream).
    speaks = speakingCarrierScenario(ulawOf(wav));
  });

  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  function carrierCalls(scenario = path.join(SCENARIOS, 'uac-inbound.xml'), extra: string[] = []) {
    return t.carrierCalls(scenario, undefined, extra);
  }

  async function lastCall() {
    return (await api(t.ctx.baseUrl, t.acct.key, 'GET', '/api/calls/?limit=1')).body.calls[0];
  }

  async function eventsOf(callId: string) {
    const rows = await t.ctx.db('call_events').where({ call_id: callId }).orderBy('created_at');
    return rows.map((r) => ({ code: r.code as string, data: JSON.parse(r.data) }));
  }

  it('<Play asset="greeting"> plays the uploaded audio: the caller hears speech for about its length', async () => {
    server.verbs('/play', '<Response><Play asset="greeting"/><Hangup/></Response>');
    await t.setInboundUrl(server.url('/play'));
    t.sipp = carrierCalls();
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    await server.waitFor(() => t.sink.packets > 0, 5000, 'audio');
    const heard = t.sink.speechSeconds();
    assert.ok(heard >= assetSpeech * 0.75, `heard ${heard} s of the asset's ${assetSpeech} s of speech`);
    assert.ok(heard <= assetSpeech + 1, `heard ${heard} s: no more than the asset holds`);
    const call = await lastCall();
    assert.equal(call.status, 'completed');
    const codes = (await eventsOf(call.uuid)).map((e) => e.code);
    assert.ok(!codes.includes('PLAY.0404'), codes.join(','));
  });

  it('a deactivated asset gives PLAY.0404 and the call goes on to the next verb (its Say is heard)', async () => {
    const off = await api(t.ctx.baseUrl, t.acct.key, 'POST', '/api/assets/deactivate', { uuid: assetUuid });
    assert.equal(off.status, 200);
    assert.equal(off.body.is_active, false);
    server.verbs(
      '/play2',
      '<Response><Play asset="greeting"/><Say>The greeting is switched off.</Say><Hangup/></Response>',
    );
    await t.setInboundUrl(server.url('/play2'));
    t.sipp = carrierCalls();
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const call = await lastCall();
    assert.equal(call.status, 'completed');
    const events = await eventsOf(call.uuid);
    const missing = events.find((e) => e.code === 'PLAY.0404');
    assert.ok(missing, events.map((e) => e.code).join(','));
    assert.equal(missing.data.asset, 'greeting');
    assert.ok(
      events.some((e) => e.code === 'TTS.0200' || e.code.startsWith('TTS')),
      'the Say after it ran',
    );
    const heard = t.sink.speechSeconds();
    assert.ok(heard >= 1, `the Say was heard: ${heard} s`);
    assert.ok(heard < assetSpeech * 0.9, `the greeting itself was not played (${heard} s heard)`);
  });

  it('a recording kept per the account retention; expired and swept, its file goes and its URL is refused', async () => {
    await t.ctx.db('accounts').where({ id: t.acct.id }).update({ recording_retention_days: 7 });
    server.verbs('/rec', '<Response><Record maxLength="4" timeout="2" playBeep="false"/><Hangup/></Response>');
    await t.setInboundUrl(server.url('/rec'));
    t.sipp = carrierCalls(speaks, ['-mp', String(CALLER_MEDIA)]);
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const call = await lastCall();
    const recs = await api(t.ctx.baseUrl, t.acct.key, 'GET', `/api/recordings/?call_uuid=${call.uuid}`);
    assert.equal(recs.body.length, 1, JSON.stringify(recs.body));
    const rec = recs.body[0];
    const days = (Date.parse(rec.expires_at) - Date.parse(rec.created_at)) / 86400_000;
    assert.ok(Math.abs(days - 7) < 0.01, `kept ${days} days (the account's own retention)`);
    const dl = await api(t.ctx.baseUrl, t.acct.key, 'POST', '/api/recordings/download', { uuid: rec.uuid });
    assert.equal(dl.status, 200);
    assert.equal((await fetch(dl.body.url)).status, 200, 'downloadable before it expires');
    const row = await t.ctx.db('recordings').where({ id: rec.uuid }).first();
    assert.ok(existsSync(row.storage_path));

    await t.ctx
      .db('recordings')
      .where({ id: rec.uuid })
      .update({ expires_at: new Date(Date.now() - 1000).toISOString() });
    const job = new RecordingRetention({ db: t.ctx.db, dataDir: t.ctx.config.dataDir, log: roomLogger('calls') });
    assert.equal(await job.runOnce(), 1);
    await job.close();

    assert.equal(existsSync(row.storage_path), false, 'the audio file is gone');
    const after = await t.ctx.db('recordings').where({ id: rec.uuid }).first();
    assert.ok(after.media_deleted_at, 'media_deleted_at is set');
    assert.equal(Number(after.size_bytes), Number(row.size_bytes), 'the row keeps its size');
    const media = await fetch(dl.body.url);
    assert.equal(media.status, 404);
    assert.equal((await media.json()).code, 'RECORDING_NOT_FOUND');
    const again = await api(t.ctx.baseUrl, t.acct.key, 'POST', '/api/recordings/download', { uuid: rec.uuid });
    assert.equal(again.status, 404);
  });
});

/** The harness's switch with the asset backend set to an s3rver bucket. */
function startSwitchWithS3(endpoint: string) {
  return startTestSwitch({
    ...PORTS,
    env: {
      SIMU_STORAGE_BACKEND: 's3',
      SIMU_S3_ENDPOINT: endpoint,
      SIMU_S3_BUCKET: 'simu-e2e',
      SIMU_S3_ACCESS_KEY_ID: 'S3RVER',
      SIMU_S3_SECRET_ACCESS_KEY: 'S3RVER',
    },
  });
}

describe('e2e: an asset kept in an S3-compatible bucket is played to a caller', function () {
  this.timeout(60000);
  let s3: S3rver;
  let s3Dir: string;
  let ctx: Awaited<ReturnType<typeof startSwitchWithS3>>;
  let acct: TestAccount;
  const server = new AccountServer();
  let sink: RtpSink | undefined;
  let sipp: SippRun | undefined;
  const DID = '+254711280002';

  before(async () => {
    s3Dir = mkdtempSync(path.join(os.tmpdir(), 'simu-e2e-s3rver-'));
    s3 = new S3rver({
      address: '127.0.0.1',
      port: 0,
      silent: true,
      directory: s3Dir,
      configureBuckets: [{ name: 'simu-e2e', configs: [] }],
    });
    const addr: AddressInfo = await s3.run();
    ctx = await startSwitchWithS3(`http://127.0.0.1:${addr.port}`);
    await server.listen();
    acct = await createAccountWithDid(ctx.db, DID);
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
  });

  after(async () => {
    sipp?.kill();
    sink?.close();
    await server.close();
    await ctx?.sw.stop();
    await s3?.close();
    rmSync(s3Dir, { recursive: true, force: true });
  });

  it('uploaded through the API into the bucket, fetched on a cold cache, heard by the caller', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-e2e-s3-src-'));
    const wav = path.join(dir, 'g.wav');
    execFileSync('espeak-ng', ['-w', wav, 'This greeting was kept in a bucket and fetched for this call.']);
    const up = await fetch(`${ctx.baseUrl}/api/assets/upload?name=bucket-greeting`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'audio/wav' },
      body: new Uint8Array(readFileSync(wav)),
    });
    const asset = await up.json();
    assert.equal(up.status, 201, JSON.stringify(asset));
    assert.equal(asset.storage_backend, 's3');
    const cache = path.join(ctx.config.dataDir, 's3-cache');
    const speech = speechSecondsOf((await readWav(path.join(cache, 'assets', acct.id, `${asset.uuid}.wav`))).samples);
    rmSync(cache, { recursive: true, force: true }); // Play must GET the object from the bucket
    rmSync(dir, { recursive: true, force: true });

    server.verbs('/s3', '<Response><Play asset="bucket-greeting"/><Hangup/></Response>');
    await ctx
      .db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/s3') });
    sink = await new RtpSink().bind(SINK_2);
    sipp = carrierCallsDid({ sip: PORTS.sip, did: DID, port: CALLER, sink: SINK_2 });
    assert.equal(await sipp.exited, 0, sipp.output());
    const heard = sink.speechSeconds();
    assert.ok(heard >= speech * 0.75, `heard ${heard} s of the asset's ${speech} s of speech`);
    assert.ok(existsSync(path.join(cache, 'assets', acct.id, `${asset.uuid}.wav`)), 'the cache was refilled');
  });
});
