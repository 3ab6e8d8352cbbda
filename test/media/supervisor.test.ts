import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import {
  MediaEngines,
  MediaError,
  MediaService,
  NgClient,
  plainAudioSdp,
  type RtpengineSupervisor,
} from '../../media/index.js';
import { nextPort, nextPorts } from '../support/ports.js';
import { newSupervisor, processAlive, processStopped, quietLogger, threadStates, tempDir, waitFor } from './helpers.js';

describe('media: rtpengine supervisor (real rtpengine)', function () {
  this.timeout(30_000);
  let supervisor: RtpengineSupervisor;
  let data: ReturnType<typeof tempDir>;

  before(async () => {
    data = tempDir('sup');
    supervisor = await newSupervisor(data.dir, { pingIntervalMs: 300, backoffMinMs: 200 });
    await supervisor.start();
  });

  after(async () => {
    await supervisor.stop();
    data.remove();
  });

  it('starts rtpengine, answers ping with pong, and writes a pid file', async () => {
    assert.equal(supervisor.healthy, true);
    assert.equal(await supervisor.client.ping(), true);
    const pid = supervisor.pid;
    assert.ok(pid && processAlive(pid));
    assert.equal(Number(readFileSync(supervisor.pidFile, 'utf8').trim()), pid);
  });

  it('an engine error is a MediaError with code MEDIA_ENGINE_ERROR', async () => {
    await assert.rejects(
      supervisor.client.query({ 'call-id': 'no-such-call' }),
      (e: unknown) => e instanceof MediaError && e.code === 'MEDIA_ENGINE_ERROR',
    );
  });

  it('after kill -9 of the child, healthy turns false and the supervisor brings it back', async () => {
    const oldPid = supervisor.pid;
    assert.ok(oldPid);
    const events: string[] = [];
    supervisor.on('degraded', () => events.push('degraded'));
    supervisor.on('healthy', () => events.push('healthy'));
    process.kill(oldPid, 'SIGKILL');
    await waitFor(() => !supervisor.healthy, 3000, 'healthy to turn false');
    await waitFor(() => supervisor.healthy, 10_000, 'healthy to turn true again');
    assert.deepEqual(events, ['degraded', 'healthy']);
    assert.notEqual(supervisor.pid, oldPid);
    assert.equal(processAlive(oldPid), false);
    assert.equal(await supervisor.client.ping(), true);
  });

  it('a request pending when the engine dies is rejected with MEDIA_ENGINE_GONE, not left hanging', async () => {
    const pid = supervisor.pid;
    assert.ok(pid);
    process.kill(pid, 'SIGSTOP'); // the engine stops answering but is still alive
    // kill() returns before every thread has stopped; on a loaded VM one once answered the request below.
    await waitFor(() => processStopped(pid), 3000, 'the engine to stop').catch((e: Error) => {
      throw new Error(`${e.message}: ${threadStates(pid).join(', ') || 'no such process'}`);
    });
    const pending = supervisor.client.request('ping', {}, 10_000);
    await new Promise((r) => setTimeout(r, 100));
    process.kill(pid, 'SIGKILL');
    await assert.rejects(pending, (e: unknown) => e instanceof MediaError && e.code === 'MEDIA_ENGINE_GONE');
    await waitFor(() => supervisor.healthy, 10_000, 'healthy again');
  });

  it('MediaEngines picks the local engine when no urls are configured, and round-robins external ones', async () => {
    const local = new MediaEngines({ urls: [], local: supervisor });
    assert.equal(local.pick().client, supervisor.client);
    const deadPort = nextPort(); // nothing answers there
    const ext = new MediaEngines({ urls: [`127.0.0.1:${supervisor.ngPort}`, `127.0.0.1:${deadPort}`] });
    await ext.start();
    try {
      // The second address has no engine behind it, so it is skipped as unhealthy.
      assert.equal(ext.pick().address, `127.0.0.1:${supervisor.ngPort}`);
      assert.equal(ext.pick().address, `127.0.0.1:${supervisor.ngPort}`);
      assert.deepEqual(
        ext.list().map((e) => e.healthy),
        [true, false],
      );
    } finally {
      ext.close();
    }
  });

  it('when the engine dies, MediaService reports its calls as lost and drops them', async () => {
    const data2 = tempDir('lost');
    const media = new MediaService({
      engines: new MediaEngines({ urls: [], local: supervisor }),
      dataDir: data2.dir,
      logger: quietLogger,
    });
    try {
      const sdp = plainAudioSdp({ address: '127.0.0.1', port: nextPorts(2), codecs: ['PCMU'] });
      await media.offer('lost-1', 'A', sdp);
      await media.offer('lost-2', 'A', sdp);
      const lost = new Promise<string[]>((resolve) => media.once('sessions-lost', resolve));
      process.kill(supervisor.pid ?? 0, 'SIGKILL');
      assert.deepEqual((await lost).sort(), ['lost-1', 'lost-2']);
      assert.equal(media.hasSession('lost-1'), false);
      await waitFor(() => supervisor.healthy, 10_000, 'healthy again');
    } finally {
      await media.close();
      data2.remove();
    }
  });

  it('a request to an address with no engine times out with MEDIA_TIMEOUT; close rejects pending ones', async () => {
    const port = nextPort();
    const client = new NgClient({ host: '127.0.0.1', port, timeoutMs: 300, retransmitMs: 100 });
    await assert.rejects(client.ping(), (e: unknown) => e instanceof MediaError && e.code === 'MEDIA_TIMEOUT');
    const pending = client.ping(5000);
    client.close();
    client.close();
    await assert.rejects(pending, (e: unknown) => e instanceof MediaError && e.code === 'MEDIA_ENGINE_GONE');
  });

  it('stop kills the engine, is safe twice, and leaves no process behind', async () => {
    const pid = supervisor.pid;
    assert.ok(pid);
    await supervisor.stop();
    await supervisor.stop();
    assert.equal(processAlive(pid), false);
    assert.equal(existsSync(supervisor.pidFile), false);
    assert.equal(supervisor.healthy, false);
  });

  it('when our process is killed with SIGKILL, the kernel takes the engine down too (no orphan)', async () => {
    const host = spawn(process.execPath, ['--import', 'tsx', 'test/media/fixtures/supervised-engine.ts'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const [pid, dir] = await new Promise<[number, string]>((resolve, reject) => {
        // The fixture prints "<pid> <dir>"; with MEDIA_TEST_LOG set, log lines share its stdout.
        createInterface({ input: host.stdout }).on('line', (line) => {
          const m = /^(\d+) (\S+)$/.exec(line);
          if (m) resolve([Number(m[1]), m[2]]);
        });
        host.once('exit', () => reject(new Error('fixture exited early')));
      });
      assert.ok(processAlive(pid));
      host.kill('SIGKILL');
      await waitFor(() => !processAlive(pid), 5000, 'the engine to die with its parent');
      if (dir.includes('simu-media-orphan-')) rmSync(dir, { recursive: true, force: true });
    } finally {
      host.kill('SIGKILL');
    }
  });
});
