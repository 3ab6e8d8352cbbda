/**
 * RFC 4028 session timers as a state machine (sip/stack/dialog/session-timer.ts) on a manual clock: when each side
 * acts, what a refresh heard does, what a failed refresh does, and the UAS's choice from an INVITE. The real
 * exchange with SIPp is test/e2e/sip/session-timer.test.ts.
 */
import assert from 'node:assert/strict';
import { ManualClock, SipRequest, SipHeaders, parseUri, type SipResponse } from '../../../sip/stack/index.js';
import { SessionTimer, uasSessionTimer, readSessionExpires } from '../../../sip/stack/dialog/session-timer.js';
import { validateRequest } from '../../../sip/stack/core/request-validator.js';

function invite(headers: Record<string, string>): SipRequest {
  const h = new SipHeaders();
  for (const [k, v] of Object.entries(headers)) h.append(k, v);
  h.append('cseq', '1 INVITE');
  return new SipRequest('INVITE', parseUri('sip:1@example.net')!, h);
}

function fakeDialog(answer: (method: string) => number) {
  const log: string[] = [];
  const d = {
    state: 'confirmed' as 'early' | 'confirmed' | 'terminated',
    localSdp: 'v=0',
    expired: [] as string[],
    async request(method: string, opts?: { headers?: Record<string, string> }) {
      log.push(`${method} ${opts?.headers?.['Session-Expires'] ?? ''}`);
      return { status: answer(method), headers: new SipHeaders() } as unknown as SipResponse;
    },
    sessionExpired(why: string) {
      d.expired.push(why);
      d.state = 'terminated';
    },
  };
  return { d, log };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('sip/stack: RFC 4028 session timer', () => {
  it('the UAS choice: the asked interval and refresher; Require: timer to a caller that supports it; 422 below 90', () => {
    const a = uasSessionTimer(invite({ supported: 'timer', 'session-expires': '1800;refresher=uac' }), 90);
    assert.deepEqual(a, {
      seconds: 1800,
      refresher: 'remote',
      headers: { 'Session-Expires': '1800;refresher=uac', Require: 'timer' },
    });
    const b = uasSessionTimer(invite({ 'session-expires': '600' }), 90);
    assert.deepEqual(b?.refresher, 'local', 'a caller without timer support cannot refresh: we do');
    assert.equal(b?.headers['Session-Expires'], '600;refresher=uas');
    assert.equal(uasSessionTimer(invite({}), 90), undefined);
    assert.deepEqual(validateRequest(invite({ 'session-expires': '60' })), {
      status: 422,
      headers: { 'Min-SE': '90' },
    });
    assert.equal(validateRequest(invite({ 'session-expires': '90' })), null);
    assert.equal(readSessionExpires(invite({ x: '120;refresher=uas' }))?.refresher, 'uas', 'compact form x');
  });

  it('remote refresher: expires at interval - min(32, interval/3) unless a refresh restarts it', async () => {
    const clock = new ManualClock(0);
    const { d } = fakeDialog(() => 200);
    const t = new SessionTimer(d, clock, { seconds: 90, refresher: 'remote' }, (s) => ({ 'Session-Expires': `${s}` }));
    clock.advance(59_000);
    assert.deepEqual(d.expired, []);
    const h = t.refreshedBy(invite({ 'session-expires': '120;refresher=uac' }), 90, 'uas');
    assert.deepEqual(h, { 'Session-Expires': '120' });
    clock.advance(87_000); // 120 - 32 = 88 s after the refresh
    assert.deepEqual(d.expired, []);
    clock.advance(1_000);
    assert.deepEqual(d.expired, ['no-refresh']);
  });

  it('local refresher: re-INVITE every half interval; a 481 to it expires the session', async () => {
    const clock = new ManualClock(0);
    let status = 200;
    const { d, log } = fakeDialog(() => status);
    new SessionTimer(d, clock, { seconds: 100, refresher: 'local' }, (s) => ({
      'Session-Expires': `${s};refresher=uas`,
    }));
    clock.advance(50_000);
    await flush();
    assert.deepEqual(log, ['INVITE 100;refresher=uas']);
    status = 481;
    clock.advance(50_000);
    await flush();
    assert.equal(log.length, 2);
    assert.deepEqual(d.expired, ['refresh-failed']);
  });
});
