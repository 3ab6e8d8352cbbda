import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { ManualClock, TypedEmitter, replaceRootLogger, roomLogger } from '../../kit/index.js';
import { MediaEngines, MediaService } from '../../media/index.js';
import { Dialog } from '../../sip/stack/index.js';

type Events = { tick: [n: number] };

class Ticker extends TypedEmitter<Events> {
  fire(n: number): boolean {
    return this.safeEmit('tick', n);
  }
}

/** A pino logger writing its JSON lines into an array. */
function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  return { logger: pino({ level: 'error' }, sink), lines };
}

const flushed = () => new Promise((r) => setImmediate(r));

describe('kit TypedEmitter', () => {
  it('a throwing listener is logged through the injected logger with the event name, and the later listeners still run', async () => {
    const { logger, lines } = capturingLogger();
    const t = new Ticker(logger);
    const seen: number[] = [];
    t.on('tick', () => {
      throw new Error('listener bug');
    });
    t.on('tick', (n) => seen.push(n));
    assert.equal(t.fire(7), true);
    await flushed();
    assert.deepEqual(seen, [7]);
    assert.equal(lines.length, 1);
    assert.equal(lines[0].msg, 'event listener threw');
    assert.equal(lines[0].event, 'tick');
    assert.equal((lines[0].err as { message: string }).message, 'listener bug');
  });

  it('without an injected logger a throwing listener is logged by the root logger (room kit), not swallowed', async () => {
    const { logger, lines } = capturingLogger();
    const before = roomLogger('x');
    replaceRootLogger(logger);
    try {
      const t = new Ticker();
      t.on('tick', () => {
        throw new Error('silent no more');
      });
      t.fire(1);
      await flushed();
    } finally {
      replaceRootLogger(before);
    }
    assert.equal(lines.length, 1);
    assert.equal(lines[0].room, 'kit');
    assert.equal((lines[0].err as { message: string }).message, 'silent no more');
  });

  it("the media room's and the SIP stack's emitters are this one (one implementation, not three)", () => {
    assert.ok(MediaService.prototype instanceof TypedEmitter);
    assert.ok(MediaEngines.prototype instanceof TypedEmitter);
    assert.ok(Dialog.prototype instanceof TypedEmitter);
  });

  it('once, off and listenerCount keep their meaning; emit reports whether anyone listened', () => {
    const t = new Ticker();
    const seen: number[] = [];
    const l = (n: number) => seen.push(n);
    assert.equal(t.fire(0), false);
    t.once('tick', l);
    assert.equal(t.listenerCount('tick'), 1);
    t.fire(1);
    t.fire(2);
    t.on('tick', l);
    t.off('tick', l);
    t.fire(3);
    assert.deepEqual(seen, [1]);
  });
});

describe('kit ManualClock', () => {
  it('fires timers and periodic jobs at their own instants in time order; a stalled job comes due but does not run', () => {
    const clock = new ManualClock(1000);
    const log: string[] = [];
    clock.setTimeout(() => log.push(`t@${clock.now()}`), 250);
    const p = clock.every(100, () => log.push(`p@${clock.now()}`), 'p');
    clock.every(300, () => log.push(`q@${clock.now()}`), 'q');
    clock.stall('q');
    clock.advance(300);
    assert.deepEqual(log, ['p@1100', 'p@1200', 't@1250', 'p@1300']);
    p.cancel();
    p.cancel();
    clock.advance(1000);
    assert.equal(log.length, 4);
    assert.equal(clock.now(), 2300);
    assert.equal(clock.pendingTimers, 1);
  });
});
