import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { parseMessage, StreamFramer } from '../../../sip/stack/message/index.js';
import { validateRequest } from '../../../sip/stack/core/request-validator.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const dir = path.resolve(repoRoot, '..', 'shared', 'testdata', 'rfc4475');
const seeds = readdirSync(dir, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.dat'))
  .map((f) => readFileSync(path.join(dir, f)));

const SIP_BYTES = [...Buffer.from(' \t\r\n:;,<>"\\@=?%/[]0123456789aZ\x00\xff')];

/** A mutation of a seed: flip, insert, delete or duplicate a span, many times. */
const mutated = fc
  .tuple(
    fc.integer({ min: 0, max: seeds.length - 1 }),
    fc.array(
      fc.tuple(
        fc.constantFrom('flip', 'insert', 'delete', 'dup', 'cut'),
        fc.nat(),
        fc.nat({ max: 64 }),
        fc.constantFrom(...SIP_BYTES),
      ),
      { maxLength: 12 },
    ),
  )
  .map(([i, ops]) => {
    let b = Buffer.from(seeds[i]);
    for (const [op, pos, len, byte] of ops) {
      const at = b.length === 0 ? 0 : pos % b.length;
      if (op === 'flip') b[at] = byte;
      else if (op === 'insert') b = Buffer.concat([b.subarray(0, at), Buffer.alloc(len, byte), b.subarray(at)]);
      else if (op === 'delete') b = Buffer.concat([b.subarray(0, at), b.subarray(at + len)]);
      else if (op === 'dup') b = Buffer.concat([b.subarray(0, at + len), b.subarray(at)]);
      else b = b.subarray(0, at);
    }
    return b;
  });

function timeOne(data: Buffer): number {
  const t0 = performance.now();
  const r = parseMessage(data);
  if (r.ok && r.message.isRequest) validateRequest(r.message);
  const framer = new StreamFramer(4096);
  framer.push(data.subarray(0, data.length >> 1));
  framer.push(data.subarray(data.length >> 1));
  return performance.now() - t0;
}

describe('parser under mutated input (fast-check)', () => {
  it('no exception escapes and no input takes over 50 ms, for a bounded 3 s of mutations', () => {
    let slowest = 0;
    fc.assert(
      fc.property(mutated, (data) => {
        // An input over budget is timed twice more and judged by its fastest run, so that a GC pause or
        // another process on this shared 2-core box is not mistaken for a slow parse.
        let dt = timeOne(data);
        if (dt >= 50) dt = Math.min(dt, timeOne(data), timeOne(data));
        slowest = Math.max(slowest, dt);
        return dt < 50;
      }),
      { interruptAfterTimeLimit: 3000, numRuns: 1_000_000, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 1e9) },
    );
    assert.ok(slowest < 50);
  });

  it('pathological inputs: a megabyte of one header, deep brackets and quotes stay bounded', () => {
    const cases = [
      Buffer.from('INVITE sip:a@b SIP/2.0\r\nVia: ' + 'a,'.repeat(30000) + '\r\n\r\n'),
      Buffer.from('INVITE sip:a@b SIP/2.0\r\nTo: ' + '<'.repeat(60000) + '\r\n\r\n'),
      Buffer.from('INVITE sip:a@b SIP/2.0\r\nTo: ' + '"\\'.repeat(30000) + '\r\n\r\n'),
      Buffer.from('INVITE sip:a@b SIP/2.0\r\n' + 'X: y\r\n'.repeat(10000) + '\r\n'),
    ];
    for (const c of cases) {
      const t0 = performance.now();
      const r = parseMessage(c, { maxMessageBytes: 1 << 20, maxHeaders: 256 });
      assert.ok(performance.now() - t0 < 50);
      assert.ok(!r.ok || r.message);
    }
  });
});
