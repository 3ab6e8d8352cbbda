import assert from 'node:assert/strict';
import { newId, newCallSid } from '../../store/index.js';

describe('store ids', () => {
  it('row ids are UUIDv7: later ids sort after earlier ones, also within one millisecond', async () => {
    const first = Array.from({ length: 3000 }, () => newId());
    await new Promise((r) => setTimeout(r, 5));
    const later = newId();
    const all = [...first, later];
    assert.deepEqual([...all].sort(), all);
    assert.equal(new Set(all).size, all.length);
    for (const id of [first[0]!, later])
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // The first 48 bits are the Unix milliseconds it was made at.
    const ms = parseInt(later.replace(/-/g, '').slice(0, 12), 16);
    assert.ok(Math.abs(ms - Date.now()) < 5000, `${ms} is now`);
  });

  it('call sids are call_ and 24 hex: the Unix second first, then 64 random bits', () => {
    const t = Date.UTC(2026, 0, 2, 3, 4, 5);
    const a = newCallSid(t);
    const b = newCallSid(t);
    const next = newCallSid(t + 1000);
    for (const s of [a, b, next]) assert.match(s, /^call_[0-9a-f]{24}$/);
    assert.equal(a.slice(5, 13), (t / 1000).toString(16));
    assert.ok(next.slice(5, 13) > a.slice(5, 13), 'a later second sorts after');
    assert.notEqual(a.slice(13), b.slice(13));
    // 64 random bits: over many sids every one of the 16 hex characters varies.
    const tails = Array.from({ length: 200 }, () => newCallSid(t).slice(13));
    for (let i = 0; i < 16; i++) assert.ok(new Set(tails.map((x) => x[i])).size > 4, `character ${i} varies`);
    assert.match(newCallSid(), /^call_[0-9a-f]{24}$/);
  });
});
