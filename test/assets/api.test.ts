import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { readWav, soxReadableFormats } from '../../media/index.js';
import { findPlayableAsset } from '../../store/index.js';
import { ApiHarness, type Tenant } from '../api/harness.js';
import { BOTH_DBS } from '../support/db.js';
import { makeSpeechFiles } from './fixtures.js';

/** Issue 11: account audio assets through the REST API, with real espeak-ng/sox audio. */
for (const kind of BOTH_DBS)
  describe(`assets API on ${kind.name}: upload, convert, list, rename, deactivate, delete`, function () {
    this.timeout(30000);
    let h: ApiHarness;
    let t: Tenant;
    let other: Tenant;
    let src: ReturnType<typeof makeSpeechFiles>;

    before(async () => {
      h = await ApiHarness.start(kind);
      t = await h.tenant('Assets Co');
      other = await h.tenant('Other Co');
      src = makeSpeechFiles();
    });
    after(async () => {
      await h.stop();
      rmSync(src.dir, { recursive: true, force: true });
    });

    const upload = (key: string, name: string, bytes: Buffer, type = 'audio/wav') =>
      fetch(`${h.base}/api/assets/upload?name=${encodeURIComponent(name)}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': type },
        body: new Uint8Array(bytes),
      }).then(async (r) => ({ status: r.status, body: await r.json() }));

    it('a raw WAV upload is converted once to 8 kHz mono 16-bit WAV under assets/<account>/<uuid>.wav', async () => {
      const r = await upload(t.key, 'greeting', src.bytes(src.wav));
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.body.name, 'greeting');
      assert.equal(r.body.is_active, true);
      assert.equal(r.body.original_format, 'wav');
      assert.equal(r.body.media_format, 'wav');
      assert.ok(Math.abs(r.body.duration_seconds - src.seconds) < 0.1, `${r.body.duration_seconds} vs ${src.seconds}`);
      const file = path.join(h.config.dataDir, 'assets', t.accountId, `${r.body.uuid}.wav`);
      assert.equal(await findPlayableAsset(h.db, t.accountId, 'greeting'), file);
      const audio = await readWav(file);
      assert.deepEqual([audio.sampleRate, audio.channels], [8000, 1]);
      assert.ok(audio.samples.length > 8000, 'over a second of samples');
      assert.equal(r.body.size_bytes, 44 + audio.samples.length * 2);
    });

    it('an Ogg Vorbis upload as JSON base64 is accepted and converted', async () => {
      const r = await h.req('POST', '/api/assets/upload', {
        key: t.key,
        body: { name: 'greeting-ogg', audio_base64: src.bytes(src.ogg).toString('base64') },
      });
      assert.equal(r.status, 201, r.text);
      assert.equal(r.body.original_format, 'ogg');
      assert.ok(Math.abs(r.body.duration_seconds - src.seconds) < 0.2);
      const flac = await upload(t.key, 'greeting-flac', src.bytes(src.flac), 'audio/flac');
      assert.equal(flac.status, 201);
      assert.equal(flac.body.original_format, 'flac');
    });

    it('MP3 is accepted exactly when this sox reads it, else refused with 415 ASSET_FORMAT_UNSUPPORTED', async () => {
      if ((await soxReadableFormats()).has('mp3')) {
        // libsox-fmt-mp3 is installed: sox writes a real MP3 of the speech, and the upload converts it.
        const mp3 = path.join(src.dir, 'greeting.mp3');
        execFileSync('sox', [src.wav, mp3]);
        const r = await upload(t.key, 'greeting-mp3', readFileSync(mp3), 'audio/mpeg');
        assert.equal(r.status, 201, JSON.stringify(r.body));
        assert.equal(r.body.original_format, 'mp3');
        assert.ok(Math.abs(r.body.duration_seconds - src.seconds) < 0.2, `${r.body.duration_seconds}`);
        await h.req('POST', '/api/assets/delete', { key: t.key, body: { uuid: r.body.uuid } });
      } else {
        // Debian's default sox (libsox-fmt-base) has no MP3 reader: an MP3 (ID3 tag first) is refused by name.
        const mp3ish = Buffer.concat([Buffer.from('ID3\x03\x00\x00\x00\x00\x00\x00'), Buffer.alloc(2000, 0x55)]);
        const r = await upload(t.key, 'song', mp3ish, 'audio/mpeg');
        assert.equal(r.status, 415);
        assert.equal(r.body.code, 'ASSET_FORMAT_UNSUPPORTED');
        assert.match(r.body.detail, /MP3/);
      }
    });

    it('refuses bad uploads with {detail, code}: not audio, undecodable, too large, name taken or invalid', async () => {
      const cases: Array<[Promise<{ status: number; body: any }>, number, string]> = [
        [upload(t.key, 'text', Buffer.from('hello, this is not audio at all')), 415, 'ASSET_FORMAT_UNSUPPORTED'],
        [
          upload(t.key, 'broken', Buffer.concat([Buffer.from('RIFF\x24\x00\x00\x00WAVEjunk'), Buffer.alloc(64, 7)])),
          422,
          'ASSET_UNDECODABLE',
        ],
        [upload(t.key, 'huge', Buffer.alloc(10 * 1024 * 1024 + 1, 1)), 413, 'ASSET_TOO_LARGE'],
        [upload(t.key, 'greeting', src.bytes(src.wav)), 409, 'ASSET_NAME_TAKEN'],
        [upload(t.key, 'bad name!', src.bytes(src.wav)), 400, 'VALIDATION_ERROR'],
        [upload(t.key, 'x', src.bytes(src.wav), 'text/plain'), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ];
      for (const [p, status, code] of cases) {
        const r = await p;
        assert.equal(r.status, status, JSON.stringify(r.body));
        assert.equal(r.body.code, code);
        assert.equal(typeof r.body.detail, 'string');
      }
      const files = (await h.req('GET', '/api/assets', { key: t.key })).body.map((a: any) => a.name);
      assert.deepEqual(files, ['greeting', 'greeting-flac', 'greeting-ogg'], 'nothing stored for refused uploads');
    });

    it('lists, renames, deactivates, activates and deletes; another account sees none of it', async () => {
      const list = await h.req('GET', '/api/assets/', { key: t.key });
      assert.equal(list.status, 200);
      const ogg = list.body.find((a: any) => a.name === 'greeting-ogg');
      assert.equal((await h.req('GET', '/api/assets', { key: other.key })).body.length, 0);
      assert.equal(
        (await h.req('POST', '/api/assets/deactivate', { key: other.key, body: { uuid: ogg.uuid } })).status,
        404,
      );

      const taken = await h.req('POST', '/api/assets/rename', {
        key: t.key,
        body: { uuid: ogg.uuid, name: 'greeting' },
      });
      assert.equal(taken.status, 409);
      const renamed = await h.req('POST', '/api/assets/rename', { key: t.key, body: { uuid: ogg.uuid, name: 'hold' } });
      assert.equal(renamed.status, 200);
      assert.equal(renamed.body.name, 'hold');

      const off = await h.req('POST', '/api/assets/deactivate', { key: t.key, body: { uuid: ogg.uuid } });
      assert.equal(off.body.is_active, false);
      assert.equal(await findPlayableAsset(h.db, t.accountId, 'hold'), undefined, 'inactive is not playable');
      const on = await h.req('POST', '/api/assets/activate', { key: t.key, body: { uuid: ogg.uuid } });
      assert.equal(on.body.is_active, true);
      const file = await findPlayableAsset(h.db, t.accountId, 'hold');
      assert.ok(file && existsSync(file));

      const del = await h.req('POST', '/api/assets/delete', { key: t.key, body: { uuid: ogg.uuid } });
      assert.equal(del.status, 200);
      assert.equal(existsSync(file), false, 'the audio file is removed');
      assert.equal(await findPlayableAsset(h.db, t.accountId, 'hold'), undefined);
      assert.equal((await h.req('POST', '/api/assets/delete', { key: t.key, body: { uuid: ogg.uuid } })).status, 404);
    });

    it('an asset whose file went missing is not playable', async () => {
      const r = await upload(t.key, 'vanishing', src.bytes(src.wav));
      const file = (await findPlayableAsset(h.db, t.accountId, 'vanishing'))!;
      rmSync(file);
      assert.equal(await findPlayableAsset(h.db, t.accountId, 'vanishing'), undefined);
      assert.equal(await findPlayableAsset(h.db, other.accountId, 'greeting'), undefined, 'names are per account');
      assert.equal(r.status, 201);
    });

    it('the endpoints are in the OpenAPI document and need an API key', async () => {
      const doc = (await h.req('GET', '/api/openapi.json')).body;
      for (const p of ['/api/assets/', '/api/assets/upload/', '/api/assets/rename/', '/api/assets/delete/'])
        assert.ok(
          Object.keys(doc.paths).some((k) => k.replace(/\/?$/, '/') === p),
          p,
        );
      assert.equal((await h.req('GET', '/api/assets')).status, 401);
    });
  });
