import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { RtpengineSupervisor } from '../../media/index.js';

/**
 * Test ports of the media room: ng 22300-22399, rtpengine RTP within 40000-44999, our RTP sockets 45000-45999.
 * Each test file takes its own slot so files can run in one mocha process without colliding.
 */
export function enginePorts(slot: number): { ngPort: number; portMin: number; portMax: number } {
  return { ngPort: 22300 + slot, portMin: 40000 + slot * 400, portMax: 40000 + slot * 400 + 399 };
}

export const quietLogger = pino({ level: process.env.MEDIA_TEST_LOG ?? 'silent' });

export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `simu-media-${prefix}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export function newSupervisor(
  slot: number,
  dataDir: string,
  extra: Partial<ConstructorParameters<typeof RtpengineSupervisor>[0]> = {},
): RtpengineSupervisor {
  return new RtpengineSupervisor({
    ...enginePorts(slot),
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

export async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
