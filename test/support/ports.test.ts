import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import dgram from 'node:dgram';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { BLOCK, extraBlock, nextPort, nextPorts, portRange, testPortBlock } from './ports.js';

/** The block another mocha-like process claims (node with tsx, this module). */
function blockOfChild(): number {
  const code = `import('${import.meta.dirname}/ports.ts').then((m) => console.log(m.testPortBlock().first))`;
  return Number(execFileSync(process.execPath, ['--import', 'tsx', '-e', code], { encoding: 'utf8' }).trim());
}

/** The first port of the block `port` lies in. */
const blockOf = (port: number): number => 9000 + Math.floor((port - 9000) / BLOCK) * BLOCK;

describe('test ports allocated per run', () => {
  it('claims a block below the ephemeral range, locked with this pid', () => {
    const { first, last } = testPortBlock();
    assert.equal(last - first + 1, BLOCK);
    const ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0]);
    assert.ok(first >= 9000 && last < ephemeralLow, `${first}-${last} below ${ephemeralLow}`);
    assert.equal(readFileSync(`/tmp/simu-test-ports-${first}.lock`, 'utf8'), String(process.pid));
  });

  it('a second run at the same time gets another block; its lock goes when it exits', () => {
    const mine = testPortBlock().first;
    const other = blockOfChild();
    assert.notEqual(other, mine);
    assert.ok(!existsSync(`/tmp/simu-test-ports-${other}.lock`), 'the child removed its lock at exit');
  });

  it('a block whose lock names a dead process is taken over', () => {
    const mine = testPortBlock().first;
    // The first block the child would try that is not ours: make it look held by a process that is gone.
    const free = blockOfChild();
    writeFileSync(`/tmp/simu-test-ports-${free}.lock`, '2147483646'); // no such pid
    assert.equal(blockOfChild(), free);
    assert.notEqual(free, mine);
  });

  it("an extra block for a wide range is another whole block, locked with this pid, apart from the run's own", () => {
    const mine = testPortBlock();
    const extra = extraBlock();
    assert.equal(extra.last - extra.first + 1, BLOCK);
    assert.ok(
      extra.last < mine.first || extra.first > mine.last,
      `${extra.first}-${extra.last} apart from ${mine.first}`,
    );
    assert.equal(readFileSync(`/tmp/simu-test-ports-${extra.first}.lock`, 'utf8'), String(process.pid));
    assert.notEqual(blockOfChild(), extra.first, 'another run does not get it');
  });

  it('never hands out a port twice in a run: past the end of its block it goes on in a further block of its own', () => {
    const { first, last } = testPortBlock();
    const seen = new Set<number>();
    // More than a whole block's worth, a hundred at a time (as a test switch takes them for rtpengine).
    for (let i = 0; i <= BLOCK / 100; i++) {
      const start = nextPorts(100);
      for (let p = start; p < start + 100; p++) {
        assert.ok(!seen.has(p), `port ${p} handed out twice`);
        seen.add(p);
      }
    }
    const beyond = [...seen].filter((p) => p < first || p > last);
    assert.ok(beyond.length > 0, 'some ports came from a further block');
    const further = blockOf(beyond[0]!);
    assert.equal(readFileSync(`/tmp/simu-test-ports-${further}.lock`, 'utf8'), String(process.pid));
    assert.notEqual(blockOfChild(), further, 'another run does not get it');
  });

  it('hands out consecutive ports within a block of its own and skips one some socket holds', async () => {
    const a = nextPort();
    const b = nextPort();
    assert.equal(b, a + 1, `${a} then ${b}`);
    assert.equal(readFileSync(`/tmp/simu-test-ports-${blockOf(a)}.lock`, 'utf8'), String(process.pid));
    const range = portRange(10);
    assert.equal(range.max - range.min, 9);
    // Hold the port that would come next: the allocator passes over it.
    const held = dgram.createSocket('udp4');
    const expected = range.max + 1;
    await new Promise<void>((r) => held.bind(expected, '127.0.0.1', () => r()));
    try {
      const got = nextPorts(2);
      assert.ok(got > expected, `${got} skips held ${expected}`);
    } finally {
      held.close();
    }
  });
});
