import assert from 'node:assert/strict';
import { CallHandling, DEFAULT_RING_SECONDS } from '../../calls/call-handling.js';
import { defaultGreeting } from '../../calls/voicemail/deposit.js';
import { isBalanceCode } from '../../calls/prepaid/balance-call.js';
import { isMailboxCode } from '../../calls/voicemail/mailbox.js';
import type { EndUserRow } from '../../store/index.js';

const deps = {} as Parameters<typeof CallHandling.of>[0]; // the policy reads only the callee's row

function callee(over: Partial<EndUserRow> = {}): EndUserRow {
  return {
    id: 'u1',
    account_id: 'a1',
    email: 'u@x.test',
    display_name: '',
    extension_number: '1002',
    is_active: true,
    registration_state: 'registered',
    last_registered_at: null,
    deleted_at: null,
    created_at: '2026-01-01T00:00:00Z',
    dnd: false,
    forward_always: null,
    forward_busy: null,
    forward_no_answer: null,
    no_answer_seconds: 20,
    voicemail_enabled: false,
    voicemail_greeting: null,
    ...over,
  };
}

describe('calls: per end-user call handling policy', () => {
  it('an end-user with nothing set has no handling: the call rings as it always did', () => {
    assert.equal(CallHandling.of(deps, callee()), undefined);
  });

  it('DND and forward-always divert before any phone rings; DND wins', () => {
    assert.equal(CallHandling.of(deps, callee({ dnd: true }))!.causeBeforeRinging(2), 'dnd');
    assert.equal(CallHandling.of(deps, callee({ forward_always: '1003' }))!.causeBeforeRinging(2), 'always');
    assert.equal(CallHandling.of(deps, callee({ dnd: true, forward_always: '1003' }))!.causeBeforeRinging(1), 'dnd');
  });

  it('no phone registered diverts only when there is a no-answer forward or a mailbox', () => {
    assert.equal(CallHandling.of(deps, callee({ voicemail_enabled: true }))!.causeBeforeRinging(0), 'offline');
    assert.equal(
      CallHandling.of(deps, callee({ forward_no_answer: '+254711000001' }))!.causeBeforeRinging(0),
      'offline',
    );
    assert.equal(CallHandling.of(deps, callee({ forward_busy: '1003' }))!.causeBeforeRinging(0), undefined);
    assert.equal(CallHandling.of(deps, callee({ voicemail_enabled: true }))!.causeBeforeRinging(1), undefined);
  });

  it('rings no_answer_seconds only when something takes an unanswered call', () => {
    const vm = CallHandling.of(deps, callee({ voicemail_enabled: true, no_answer_seconds: 7 }))!;
    assert.equal(vm.ringSeconds, 7);
    const busyOnly = CallHandling.of(deps, callee({ forward_busy: '1003', no_answer_seconds: 7 }))!;
    assert.equal(busyOnly.ringSeconds, DEFAULT_RING_SECONDS);
  });

  it('the spoken greeting names the end-user, else spells the extension', () => {
    assert.match(defaultGreeting({ display_name: 'Bob', extension_number: '1002' }), /^Bob is not available/);
    assert.match(defaultGreeting({ display_name: ' ', extension_number: '1002' }), /^extension 1 0 0 2 is/);
  });

  it('*97 is the mailbox code, as written or percent-encoded; nothing else is', () => {
    assert.ok(isMailboxCode('*97'));
    assert.ok(isMailboxCode('%2A97'));
    for (const u of ['97', '*98', '*970', '%E0%A4%A', undefined, '*'.repeat(100)])
      assert.ok(!isMailboxCode(u), String(u));
  });

  it('the balance code is read the same way: as written or percent-encoded, up to 32 characters; nothing else is', () => {
    assert.ok(isBalanceCode('*100#', '*100#'));
    assert.ok(isBalanceCode('*100%23', '*100#'));
    assert.ok(isBalanceCode('%2A100%23', '*100#'));
    assert.ok(isBalanceCode('*144#', '*144#'));
    for (const u of ['*100', '100#', '*100%2', '%E0%A4%A', undefined, `*100#${'%20'.repeat(10)}`])
      assert.ok(!isBalanceCode(u, '*100#'), String(u));
    assert.ok(!isBalanceCode('*100#', ''), 'no code configured: nothing is the balance code');
  });
});
