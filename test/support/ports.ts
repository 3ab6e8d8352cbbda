/**
 * Loopback ports for the tests, allocated per run so that two suites on one box never collide.
 *
 * A run (one mocha process) claims a block of BLOCK ports by creating /tmp/simu-test-ports-<first>.lock holding
 * its pid; a block whose lock names a dead process is taken over. Blocks lie between 9000 (above the ports SIPp
 * takes by default: media 6000 and up, control 8888 and up) and the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), so no port the
 * kernel hands out for an outgoing connection or a listen(0) can fall in one. The run hands out consecutive ports
 * of its block, skipping any port some socket of the box holds right now (/proc/net, any address, any state).
 *
 * No port is handed out twice in a run: when the block is used up the run claims a further one. A port handed out
 * is not bound yet, often not for minutes: the test files take theirs as they load (all of them before the first
 * test runs: about 4,000 ports for the whole suite), and a helper takes a SIPp's media ports before SIPp binds
 * its own SIP port. Going round the block again handed such a port to a second taker, which found it taken when
 * the first bound it (a SIPp's video RTP port, media port + 2, was its own SIP port: errno 98). Only when no
 * block of the range is free (other runs hold them all) does a run go round its own blocks again, warned once.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';

export const BLOCK = 2000;
const FIRST = 9000;
/** Not os.tmpdir(): test/support/hooks.ts points TMPDIR at a directory of this run, and the locks are shared. */
const LOCK_DIR = '/tmp';

/** The first ports of the blocks this run holds, in the order claimed; ports come from blocks[current]. */
const blocks: number[] = [];
let current = 0;
let cursor = 0;
/** No further block could be claimed: the run goes round its own blocks again. */
let recycling = false;

/** The first of `n` consecutive ports of this run's blocks that nothing holds right now. */
export function nextPorts(n = 1): number {
  if (n < 1 || n > BLOCK / 2) throw new Error(`cannot allocate ${n} consecutive test ports`);
  claimBlock();
  const held = heldPorts();
  for (let passes = 0; passes <= 2 * blocks.length + 1; passes++) {
    const first = blocks[current]!;
    while (cursor + n <= BLOCK) {
      const start = first + cursor;
      let clash = -1;
      for (let p = start; p < start + n; p++) if (held.has(p)) clash = p;
      if (clash < 0) {
        cursor += n;
        return start;
      }
      cursor = clash - first + 1;
    }
    nextBlock();
  }
  throw new Error(`no ${n} free consecutive ports left in this run's test port blocks (${blocks.join(', ')})`);
}

/** One free port of this run's blocks. */
export const nextPort = (): number => nextPorts(1);

/** The block after the one used up: a new one while the range has one free, else the next of this run's own. */
function nextBlock(): void {
  cursor = 0;
  if (!recycling) {
    const more = lockFreeBlock();
    if (more !== undefined) {
      blocks.push(more);
      current = blocks.length - 1;
      return;
    }
    recycling = true;
    process.emitWarning(
      `every test port block is held: this run hands out ports of its blocks (${blocks.join(', ')}) again, ` +
        'which can collide with a port handed out earlier and not bound yet',
    );
  }
  current = (current + 1) % blocks.length;
}

/** `n` consecutive free ports as a range, e.g. for rtpengine's RTP ports. */
export function portRange(n: number): { min: number; max: number } {
  const min = nextPorts(n);
  return { min, max: min + n - 1 };
}

/** The first block this run claimed (on first use). */
export function testPortBlock(): { first: number; last: number } {
  const first = claimBlock();
  return { first, last: first + BLOCK - 1 };
}

/** The run's first block, claimed on first use. */
function claimBlock(): number {
  if (blocks.length === 0) {
    const first = lockFreeBlock();
    if (first === undefined)
      throw new Error('every test port block below the ephemeral range is held by a live test run');
    blocks.push(first);
  }
  return blocks[0]!;
}

/**
 * A further whole block of BLOCK ports for this run alone, locked and released at exit like the first: for a
 * bench that needs a range wider than half a block (rtpengine's RTP ports for hundreds of calls).
 */
export function extraBlock(): { first: number; last: number } {
  claimBlock(); // the run's own block first, so the two never coincide
  const first = lockFreeBlock();
  if (first === undefined) throw new Error('every test port block below the ephemeral range is held');
  return { first, last: first + BLOCK - 1 };
}

/** The first port of the lowest block no live run holds, locked with this pid until this process exits. */
function lockFreeBlock(): number | undefined {
  const ephemeralLow = ephemeralRange()[0];
  for (let first = FIRST; first + BLOCK <= ephemeralLow; first += BLOCK) {
    const lock = path.join(LOCK_DIR, `simu-test-ports-${first}.lock`);
    if (!tryLock(lock)) continue;
    if (locks.length === 0) process.once('exit', releaseLocks);
    locks.push(lock);
    return first;
  }
  return undefined;
}

/** The locks of this run's blocks, removed as it exits. */
const locks: string[] = [];

function releaseLocks(): void {
  for (const lock of locks) {
    try {
      if (readFileSync(lock, 'utf8').trim() === String(process.pid)) unlinkSync(lock);
    } catch {
      // already gone
    }
  }
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
