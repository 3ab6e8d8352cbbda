import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { AssetLibrary, S3Client, S3MediaStorage, mediaStorageFor } from '../../media/index.js';
import { ConfigError, loadConfig } from '../../config/index.js';
import { findPlayableAsset, insertAccount, type Db } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { makeSpeechFiles } from './fixtures.js';

/**
 * Issue 11, storage backends: the `s3` asset backend against a real S3-compatible server (npm s3rver, which checks
 * SigV4 signatures), with the minimal signed-request client of media/s3-client.ts.
 */
describe('assets on an S3-compatible backend (s3rver)', function () {
  this.timeout(30000);
  let server: S3rver;
  let endpoint: string;
  let db: Db;
  let dataDir: string;
  let s3Dir: string;
  let accountId: string;
  let src: ReturnType<typeof makeSpeechFiles>;
  const creds = { bucket: 'simu-assets', region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

  before(async () => {
    s3Dir = mkdtempSync(path.join(os.tmpdir(), 'simu-s3rver-'));
    server = new S3rver({
      address: '127.0.0.1',
      port: 0,
      silent: true,
      directory: s3Dir,
      configureBuckets: [{ name: creds.bucket, configs: [] }],
    });
    const addr: AddressInfo = await server.run();
    endpoint = `http://127.0.0.1:${addr.port}`;
    db = await sqliteDb.open();
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'simu-s3-data-'));
    accountId = (await insertAccount(db, 'S3 Co')).id;
    src = makeSpeechFiles('This greeting lives in a bucket.');
  });
  after(async () => {
    await server?.close();
    await db?.destroy();
    for (const d of [s3Dir, dataDir, src?.dir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('an upload is stored as an object, played from a local cache, fetched again when the cache is cold, deleted', async () => {
    const storage = new S3MediaStorage(dataDir, { endpoint, ...creds });
    const library = new AssetLibrary({ db, dataDir, storage });
    const row = await library.upload(accountId, 'bucket-greeting', readFileSync(src.ogg));
    assert.equal(row.storage_backend, 's3');
    assert.equal(row.storage_path, `assets/${accountId}/${row.id}.wav`);
    assert.equal(existsSync(path.join(dataDir, 'assets', accountId, `${row.id}.wav`)), false, 'not kept as local');

    const client = new S3Client({ endpoint, ...creds });
    const object = await client.getObject(row.storage_path);
    assert.ok(object, 'the object is in the bucket');
    assert.equal(object.subarray(0, 4).toString(), 'RIFF');
    assert.equal(object.length, row.size_bytes);

    const cached = (await findPlayableAsset(db, accountId, 'bucket-greeting', storage)) ?? '';
    assert.ok(cached?.startsWith(path.join(dataDir, 's3-cache')), String(cached));
    assert.deepEqual(readFileSync(cached), object);
    assert.equal(await findPlayableAsset(db, accountId, 'bucket-greeting'), undefined, 'no s3 source, not playable');

    await storage.evict(row.storage_path);
    assert.equal(existsSync(cached), false);
    const refetched = await findPlayableAsset(db, accountId, 'bucket-greeting', storage);
    assert.ok(refetched);
    assert.equal(refetched, cached);
    assert.deepEqual(readFileSync(refetched), object, 'a cold cache is filled from the bucket');

    await library.delete(accountId, row.id);
    assert.equal(await client.getObject(row.storage_path), undefined, 'the object is deleted');
    assert.equal(existsSync(cached), false, 'and its cached copy');
  });

  /** The credentials and request of the AWS documentation's example (GET Object with a Range header). */
  const awsExample = {
    bucket: 'examplebucket',
    region: 'us-east-1',
    accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  };
  const awsExampleRequest = [
    'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    new Date('2013-05-24T00:00:00Z'),
    { Range: 'bytes=0-9' },
  ] as const;

  // s3rver checks the access key id of a SigV4 request but not its signature, so the signer is checked against
  // the published example instead (AWS S3 API reference, "Signature Calculations for the Authorization Header:
  // Transferring Payload in a Single Chunk", Example: GET Object).
  it('SigV4 signing matches the AWS documentation example (GET Object with a Range header)', async () => {
    const client = new S3Client({
      endpoint: 'https://examplebucket.s3.amazonaws.com',
      ...awsExample,
    });
    const headers = await client.sign(
      'GET',
      new URL('https://examplebucket.s3.amazonaws.com/test.txt'),
      ...awsExampleRequest,
    );
    assert.equal(
      headers.authorization,
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, ' +
        'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, ' +
        'Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
    assert.equal(headers['x-amz-date'], '20130524T000000Z');
  });

  it('virtual-hosted style puts the bucket in the host name, and signs it as the AWS example does', async () => {
    const client = new S3Client({
      endpoint: 'https://s3.amazonaws.com',
      ...awsExample,
      virtualHostedStyle: true,
    });
    const url = client.objectUrl('test.txt');
    assert.equal(url.href, 'https://examplebucket.s3.amazonaws.com/test.txt');
    const headers = await client.sign('GET', url, ...awsExampleRequest);
    assert.match(headers.authorization!, /Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41$/);
    assert.equal(
      new S3Client({ endpoint: 'http://127.0.0.1:9000', ...creds }).objectUrl('a b/c.wav').href,
      'http://127.0.0.1:9000/simu-assets/a%20b/c.wav',
    );
  });

  it('temporary credentials send their session token, signed, and the server takes the request', async () => {
    const client = new S3Client({ endpoint, ...creds, sessionToken: 'FQoGZXIvYXdzEXAMPLETOKEN' });
    const headers = await client.sign('GET', client.objectUrl('x.wav'), 'UNSIGNED-PAYLOAD', new Date());
    assert.equal(headers['x-amz-security-token'], 'FQoGZXIvYXdzEXAMPLETOKEN');
    assert.match(headers.authorization!, /SignedHeaders=[^,]*x-amz-security-token/);
    await client.putObject('tokens/x.wav', Buffer.from('RIFF'));
    assert.deepEqual(await client.getObject('tokens/x.wav'), Buffer.from('RIFF'));
    await client.deleteObject('tokens/x.wav');
  });

  it('an unknown access key is refused by the server (S3Error 403)', async () => {
    const bad = new S3Client({ endpoint, ...creds, accessKeyId: 'NOT-A-KEY' });
    await assert.rejects(bad.putObject('x/y.wav', Buffer.from('RIFF')), (e: any) => e.httpStatus === 403);
  });

  it('the configuration picks the backend; s3 without an endpoint or bucket is a clear ConfigError', () => {
    const base = { SIMU_DATA_DIR: dataDir, SIMU_LOG_LEVEL: 'silent' };
    assert.equal(mediaStorageFor(loadConfig(base, dataDir)).backend, 'local');
    const s3 = loadConfig(
      {
        ...base,
        SIMU_STORAGE_BACKEND: 's3',
        SIMU_S3_ENDPOINT: endpoint,
        SIMU_S3_BUCKET: creds.bucket,
        SIMU_S3_ACCESS_KEY_ID: 'S3RVER',
        SIMU_S3_SECRET_ACCESS_KEY: 'S3RVER',
      },
      dataDir,
    );
    assert.equal(mediaStorageFor(s3).backend, 's3');
    assert.throws(() => mediaStorageFor(loadConfig({ ...base, SIMU_STORAGE_BACKEND: 's3' }, dataDir)), ConfigError);
  });
});
