import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { MediaEngines, MediaService, RtpengineSupervisor } from '../../media/index.js';
import { nextPort, portRange } from '../support/ports.js';
import { eventually } from '../support/wait.js';

/**
 * Ports for one test engine, from this run's block (test/support/ports.ts), so two runs on this shared box never
 * collide: an ng port and a 400-port RTP range (rtpengine skips ports already in use within it).
 */
export function freeEnginePorts(): { ngPort: number; portMin: number; portMax: number } {
  const ngPort = nextPort();
  const { min, max } = portRange(400);
  return { ngPort, portMin: min, portMax: max };
}

export const quietLogger = pino({ level: process.env.MEDIA_TEST_LOG ?? 'silent' });

export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `simu-media-${prefix}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export async function newSupervisor(
  dataDir: string,
  extra: Partial<ConstructorParameters<typeof RtpengineSupervisor>[0]> = {},
): Promise<RtpengineSupervisor> {
  return new RtpengineSupervisor({
    ...freeEnginePorts(),
    interface: '127.0.0.1',
    dataDir,
    logger: quietLogger,
    ...extra,
  });
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls `cond` every 25 ms until it holds (test/support/wait.ts `eventually`); rejects after `timeoutMs`. */
export async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  await eventually(cond, what, timeoutMs, 25);
}

/** The state letter of each thread of `pid` (/proc/<pid>/task/<tid>/stat), e.g. 'T' for stopped. */
export function threadStates(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/task`).map((tid) => {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const end = stat.lastIndexOf(')');
      return `${stat.slice(end + 2, end + 3)}:${stat.slice(stat.indexOf('(') + 1, end)}`;
    });
  } catch {
    return [];
  }
}

/** True once every thread of `pid` is stopped. */
export function processStopped(pid: number): boolean {
  const states = threadStates(pid);
  return states.length > 0 && states.every((s) => s.startsWith('T'));
}

/**
 * A supervised rtpengine and a MediaService over it, in a temporary data directory, its DTMF log wired to the
 * service; `stop()` ends both and removes the directory.
 */
export async function startMediaService(prefix: string) {
  const data = tempDir(prefix);
  const dtmfPort = nextPort();
  const supervisor = await newSupervisor(data.dir, { dtmfLogPort: dtmfPort });
  await supervisor.start();
  const media = new MediaService({
    engines: new MediaEngines({ urls: [], local: supervisor }),
    dataDir: data.dir,
    logger: quietLogger,
    engineRecordingDir: supervisor.recordingDir,
    dtmfPort,
  });
  await media.start();
  return {
    media,
    supervisor,
    data,
    async stop(): Promise<void> {
      await media.close();
      await supervisor.stop();
      data.remove();
    },
  };
}
