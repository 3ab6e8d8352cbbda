/**
 * The state machine of forking (calls/flows/fork.ts) with fake forks: who wins, who is cancelled and with what
 * reason, and which failure stands for a set of failed forks (RFC 3261 §16.7 step 6 as Simu applies it).
 */
import assert from 'node:assert/strict';
import {
  COMPLETED_ELSEWHERE,
  SipCanceledError,
  SipResponseError,
  SipTimeoutError,
  type Dialog,
} from '../../sip/stack/index.js';
import { bestFailure, raceForks } from '../../calls/flows/fork.js';
import type { DialLegOutcome } from '../../calls/flows/dial-leg.js';

/** A fork the test settles by hand; it records the reason it was aborted with. */
function manualFork() {
  let settle!: (o: DialLegOutcome) => void;
  const f = {
    abortedWith: undefined as unknown,
    byes: 0,
    dialog: { bye: async () => void f.byes++ } as unknown as Dialog,
    run: (signal: AbortSignal) =>
      new Promise<DialLegOutcome>((resolve) => {
        settle = resolve;
        signal.addEventListener('abort', () => (f.abortedWith = signal.reason), { once: true });
      }),
    answer: () => settle({ ok: true, dialog: f.dialog }),
    fail: (error: unknown, noAnswer = false) => settle({ ok: false, error, noAnswer }),
  };
  return f;
}

const tick = () => new Promise((r) => setImmediate(r));
const busy = (): DialLegOutcome => ({ ok: false, error: new SipResponseError(486, 'Busy Here'), noAnswer: false });
const rangOut = (): DialLegOutcome => ({ ok: false, error: new SipCanceledError(), noAnswer: true });
const status = (o: { error: unknown }) => (o.error as { status?: number }).status;

describe('calls/fork: ringing every fork at once', () => {
  it('the first answer wins; the others are cancelled with "Call completed elsewhere"', async () => {
    const [a, b, c] = [manualFork(), manualFork(), manualFork()];
    const race = raceForks([a.run, b.run, c.run]);
    await tick();
    b.answer();
    const outcome = await race;
    assert.equal(outcome.ok, true);
    assert.equal(outcome.ok && outcome.index, 1);
    assert.equal(a.abortedWith, COMPLETED_ELSEWHERE);
    assert.equal(c.abortedWith, COMPLETED_ELSEWHERE);
    assert.equal(b.abortedWith, undefined, 'the winner is not cancelled');
  });

  it('a busy fork does not end the others; a later answer still wins', async () => {
    const [a, b] = [manualFork(), manualFork()];
    const race = raceForks([a.run, b.run]);
    let done = false;
    void race.then(() => (done = true));
    await tick();
    a.fail(new SipResponseError(486, 'Busy Here'));
    await tick();
    assert.equal(done, false, 'still ringing the other phone');
    assert.equal(b.abortedWith, undefined);
    b.answer();
    const outcome = await race;
    assert.equal(outcome.ok && outcome.index, 1);
  });

  it('a second answer in the same instant as the winner is hung up', async () => {
    const [a, b] = [manualFork(), manualFork()];
    const race = raceForks([a.run, b.run]);
    await tick();
    a.answer();
    b.answer();
    const outcome = await race;
    await tick();
    assert.equal(outcome.ok && outcome.index, 0);
    assert.equal(a.byes, 0);
    assert.equal(b.byes, 1);
  });

  it("the caller's cancel reaches every fork with the caller's reason", async () => {
    const [a, b] = [manualFork(), manualFork()];
    const caller = new AbortController();
    const race = raceForks([a.run, b.run], caller.signal);
    await tick();
    caller.abort('gone');
    assert.equal(a.abortedWith, 'gone');
    assert.equal(b.abortedWith, 'gone');
    a.fail(new SipCanceledError());
    b.fail(new SipCanceledError());
    const outcome = await race;
    assert.equal(outcome.ok, false);
    assert.ok(!outcome.ok && outcome.error instanceof SipCanceledError && !outcome.noAnswer);
  });

  it('no forks at all is a failure, not a hang', async () => {
    const outcome = await raceForks([]);
    assert.equal(outcome.ok, false);
  });
});

describe('calls/fork: the failure that stands for all forks', () => {
  it('a 6xx wins over everything', () => {
    const decline: DialLegOutcome = { ok: false, error: new SipResponseError(603, 'Decline'), noAnswer: false };
    assert.equal(status(bestFailure([busy(), rangOut(), decline])), 603);
  });

  it('busy only when every fork was busy', () => {
    assert.equal(status(bestFailure([busy(), busy()])), 486);
    const mixed = bestFailure([busy(), rangOut()]);
    assert.equal(mixed.noAnswer, true, 'a phone that rang out makes it no answer');
  });

  it('otherwise the lowest class, 4xx before 5xx, and a transport failure last', () => {
    const unavailable: DialLegOutcome = {
      ok: false,
      error: new SipResponseError(480, 'Temporarily Unavailable'),
      noAnswer: false,
    };
    const serverError: DialLegOutcome = { ok: false, error: new SipResponseError(500, 'Oops'), noAnswer: false };
    const timeout: DialLegOutcome = { ok: false, error: new SipTimeoutError(), noAnswer: false };
    assert.equal(status(bestFailure([serverError, unavailable])), 480);
    assert.equal(status(bestFailure([serverError, new Error('x') as never].map(wrap))), 500);
    assert.equal(status(bestFailure([timeout, serverError])), 408);
  });

  it('a lost fork cancelled by the switch does not hide a real answer of another', () => {
    const canceled: DialLegOutcome = { ok: false, error: new SipCanceledError(), noAnswer: false };
    assert.equal(status(bestFailure([canceled, busy()])), 486);
    assert.ok(bestFailure([canceled, canceled]).error instanceof SipCanceledError);
  });
});

function wrap(o: DialLegOutcome | Error): DialLegOutcome {
  return o instanceof Error ? { ok: false, error: o, noAnswer: false } : o;
}
