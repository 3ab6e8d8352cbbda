import { strict as assert } from 'node:assert';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { detached } from '../../kit/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap growth (MB) from keeping 2,000 short keys, each cut from its own 20 KB message text. */
function keptMb(copy: (s: string) => string): number {
  gc();
  const before = process.memoryUsage().heapUsed;
  const keys = new Map<string, number>();
  for (let i = 0; i < 2000; i++) {
    const text = `REGISTER sip:x SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1;branch=z9hG4bK-${i}-x\r\n` + 'X'.repeat(20_000);
    const via = text.split('\r\n')[1]!.slice(5);
    keys.set(copy(`${via.slice(via.indexOf('branch=') + 7)}|10.0.0.1|REGISTER`), i);
  }
  gc();
  const mb = (process.memoryUsage().heapUsed - before) / 1e6;
  assert.equal(keys.size, 2000);
  return mb;
}

describe('kit/detached', () => {
  it('is the same text', () => {
    for (const s of ['', 'a', 'z9hG4bK-1|10.0.0.1:5060|REGISTER', 'héllo ☎ 𝄞'.repeat(5)]) assert.equal(detached(s), s);
  });

  it('keeps nothing of the text a key was cut from (2,000 keys of 20 KB messages: 40 MB kept without it)', () => {
    const without = keptMb((s) => s);
    const withCopy = keptMb(detached);
    assert.ok(without > 30, `the control keeps the messages: ${without.toFixed(1)} MB`);
    assert.ok(withCopy < 3, `${withCopy.toFixed(1)} MB kept`);
  });
});
