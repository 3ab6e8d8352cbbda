/**
 * Loopback ports for the tests, allocated per run so that two suites on one box never collide.
 *
 * A run (one mocha process) claims a block of BLOCK ports by creating /tmp/simu-test-ports-<first>.lock holding
 * its pid; a block whose lock names a dead process is taken over. Blocks lie between 9000 (above the ports SIPp
 * takes by default: media 6000 and up, control 8888 and up) and the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), so no port the
 * kernel hands out for an outgoing connection or a listen(0) can fall in one. Within its block the run hands out
 * consecutive ports, wrapping round at the end, and skips any port some socket of the box holds right now
 * (/proc/net, any address, any state): test files run one after another in a run and release their ports.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';

export const BLOCK = 2000;
const FIRST = 9000;
/** Not os.tmpdir(): test/support/hooks.ts points TMPDIR at a directory of this run, and the locks are shared. */
const LOCK_DIR = '/tmp';

let block: { first: number; lock: string } | undefined;
let cursor = 0;

/** The first of `n` consecutive ports of this run's block that nothing holds right now. */
export function nextPorts(n = 1): number {
  if (n < 1 || n > BLOCK / 2) throw new Error(`cannot allocate ${n} consecutive test ports`);
  const { first } = claimBlock();
  const held = heldPorts();
  for (let tried = 0; tried < BLOCK; tried++) {
    if (cursor + n > BLOCK) cursor = 0;
    const start = first + cursor;
    let clash = -1;
    for (let p = start; p < start + n; p++) if (held.has(p)) clash = p;
    if (clash < 0) {
      cursor += n;
      return start;
    }
    cursor = clash - first + 1;
  }
  throw new Error(`no ${n} free consecutive ports left in test block ${first}-${first + BLOCK - 1}`);
}

/** One free port of this run's block. */
export const nextPort = (): number => nextPorts(1);

/** `n` consecutive free ports as a range, e.g. for rtpengine's RTP ports. */
export function portRange(n: number): { min: number; max: number } {
  const min = nextPorts(n);
  return { min, max: min + n - 1 };
}

/** The block this run holds (claimed on first use). */
export function testPortBlock(): { first: number; last: number } {
  const { first } = claimBlock();
  return { first, last: first + BLOCK - 1 };
}

function claimBlock(): { first: number; lock: string } {
  block ??= lockFreeBlock();
  return block;
}

/**
 * A further whole block of BLOCK ports for this run alone, locked and released at exit like the first: for a
 * bench that needs a range wider than half a block (rtpengine's RTP ports for hundreds of calls).
 */
export function extraBlock(): { first: number; last: number } {
  claimBlock(); // the run's own block first, so the two never coincide
  const { first } = lockFreeBlock();
  return { first, last: first + BLOCK - 1 };
}

/** The lowest block no live run holds, locked with this pid until this process exits. */
function lockFreeBlock(): { first: number; lock: string } {
  const ephemeralLow = ephemeralRange()[0];
  for (let first = FIRST; first + BLOCK <= ephemeralLow; first += BLOCK) {
    const lock = path.join(LOCK_DIR, `simu-test-ports-${first}.lock`);
    if (!tryLock(lock)) continue;
    process.once('exit', () => {
      try {
        if (readFileSync(lock, 'utf8').trim() === String(process.pid)) unlinkSync(lock);
      } catch {
        // already gone
      }
    });
    return { first, lock };
  }
  throw new Error(`every test port block of ${FIRST}-${ephemeralLow - 1} is held by a live test run`);
}

/** Creates the lock exclusively; a lock left by a process that is gone is removed and tried once more. */
function tryLock(lock: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lock, 'wx', 0o644);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let owner: number;
    try {
      owner = Number(readFileSync(lock, 'utf8').trim());
    } catch {
      continue; // removed meanwhile: try again
    }
    // A lock being written (empty for an instant) or of a live process is left alone.
    if (!Number.isInteger(owner) || owner <= 0 || alive(owner)) return false;
    try {
      unlinkSync(lock);
    } catch {
      // another run removed it first; it may create it first too, which the retry sees
    }
  }
  return false;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (lo > 0 && hi >= lo) return [lo, hi];
  } catch {
    // not Linux: the usual default
  }
  return [32768, 60999];
}

/** Local ports of every socket of the box, TCP and UDP, IPv4 and IPv6, in any state. */
function heldPorts(): Set<number> {
  const held = new Set<number>();
  for (const table of ['tcp', 'udp', 'tcp6', 'udp6']) {
    let text: string;
    try {
      text = readFileSync(`/proc/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const local = line.trim().split(/\s+/)[1];
      if (local) held.add(parseInt(local.slice(local.lastIndexOf(':') + 1), 16));
    }
  }
  return held;
}
