import { createSocket } from 'node:dgram';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { RtpengineSupervisor } from '../../media/index.js';

/**
 * Test ports of the media room: ng 22300-22399, rtpengine RTP within 40000-44999, our RTP sockets 45000-45999.
 * Free ports are probed so test files, and two runs on this shared box, do not collide.
 */
/** A UDP port in [from, to] that nothing on 127.0.0.1 holds right now (another run of these tests may). */
export async function freeUdpPort(from: number, to: number): Promise<number> {
  const span = to - from + 1;
  const start = Math.floor(Math.random() * span);
  for (let i = 0; i < span; i += 1) {
    const port = from + ((start + i) % span);
    const socket = createSocket('udp4');
    const free = await new Promise<boolean>((resolve) => {
      socket.once('error', () => resolve(false));
      socket.bind(port, '127.0.0.1', () => resolve(true));
    });
    socket.close();
    if (free) return port;
  }
  throw new Error(`no free UDP port in ${from}-${to}`);
}

/**
 * Ports for one test engine: its ng port is a free one of 22300-22349 (so two test runs on this shared box do
 * not collide), its RTP range the 400-port block of that slot (rtpengine skips ports already in use).
 */
export async function freeEnginePorts(): Promise<{ ngPort: number; portMin: number; portMax: number }> {
  const ngPort = await freeUdpPort(22300, 22349);
  const block = (ngPort - 22300) % 12;
  return { ngPort, portMin: 40000 + block * 400, portMax: 40000 + block * 400 + 399 };
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
    ...(await freeEnginePorts()),
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
