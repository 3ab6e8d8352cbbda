import assert from 'node:assert/strict';
import { ManualClock } from '../../kit/index.js';
import { SipHeaders, SipRequest, SipResponse, parseUri, type UserAgent } from '../../sip/stack/index.js';
import { UpstreamRegistrations, type RegistrationChange } from '../../sip/upstream-registration.js';
import type { TrunkRow } from '../../store/index.js';

const trunk = {
  id: 't1',
  name: 'upstream',
  host: '192.0.2.10',
  port: 5060,
  transport: 'udp',
  username: 'u',
  password: 'p',
  is_active: true,
  register: true,
  register_expires: 600,
} as TrunkRow;

/** A fake user agent: answers each REGISTER with the next status of `statuses` (granting 120 s on 200). */
function fakeUa(statuses: number[]) {
  const sent: Array<{ cseq: string; callId: string; contact: string; expires: string }> = [];
  const ua = {
    contact: () => '<sip:203.0.113.1:5060>',
    request: async (_uri: string, o: { headers: Record<string, string> }) => {
      sent.push({
        cseq: o.headers.CSeq,
        callId: o.headers['Call-ID'],
        contact: o.headers.Contact,
        expires: o.headers.Expires,
      });
      const h = new SipHeaders();
      const status = statuses.shift() ?? 200;
      if (status === 200) h.set('contact', `${o.headers.Contact};expires=120`);
      return new SipResponse(status, status === 200 ? 'OK' : 'Forbidden', h);
    },
  } as unknown as UserAgent;
  return { ua, sent };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('sip: upstream registration (refresh, back-off, registered contact)', () => {
  it('refreshes at half the granted time with the same Call-ID and a rising CSeq', async () => {
    const clock = new ManualClock(0);
    const { ua, sent } = fakeUa([200, 200]);
    const reg = new UpstreamRegistrations(ua, clock);
    reg.sync([trunk]);
    await flush();
    assert.equal(reg.state('t1'), 'registered');
    clock.advance(59_000);
    await flush();
    assert.equal(sent.length, 1);
    clock.advance(1_000);
    await flush();
    assert.equal(sent.length, 2);
    assert.equal(sent[0].callId, sent[1].callId);
    assert.deepEqual(
      sent.map((s) => s.cseq),
      ['2 REGISTER', '4 REGISTER'],
    );
    assert.match(sent[0].contact, /^<sip:simu-[0-9a-f]{16}@203\.0\.113\.1:5060>$/);
    assert.equal(sent[0].expires, '600');
  });

  it('backs off 5 s, 10 s, 20 s after failures, then registers', async () => {
    const clock = new ManualClock(0);
    const { ua, sent } = fakeUa([403, 403, 403, 200]);
    const reg = new UpstreamRegistrations(ua, clock);
    const changes: RegistrationChange[] = [];
    reg.on('change', (c) => changes.push(c));
    reg.sync([trunk]);
    await flush();
    for (const wait of [5_000, 10_000, 20_000]) {
      assert.equal(reg.state('t1'), 'failed');
      clock.advance(wait - 1);
      await flush();
      const before = sent.length;
      clock.advance(1);
      await flush();
      assert.equal(sent.length, before + 1, `retried after ${wait} ms`);
    }
    assert.equal(reg.state('t1'), 'registered');
    assert.deepEqual(
      changes.map((c) => [c.state, c.seconds]),
      [
        ['registering', undefined],
        ['failed', 5],
        ['failed', 10],
        ['failed', 20],
        ['registered', 120],
      ],
    );
  });

  it('claims an INVITE to the registered contact and takes the number from To', async () => {
    const { ua, sent } = fakeUa([200]);
    const reg = new UpstreamRegistrations(ua, new ManualClock(0));
    reg.sync([trunk]);
    await flush();
    const token = /sip:(simu-[0-9a-f]+)@/.exec(sent[0].contact)![1];
    const h = new SipHeaders();
    h.set('to', '<sip:+254711800001@carrier.example>');
    const invite = new SipRequest('INVITE', parseUri(`sip:${token}@203.0.113.1:5060`)!, h);
    assert.equal(reg.claim(invite)?.id, 't1');
    assert.equal((invite.uri as { user?: string }).user, '+254711800001');
    const other = new SipRequest('INVITE', parseUri('sip:simu-0000000000000000@203.0.113.1')!, h);
    assert.equal(reg.claim(other), undefined);
    reg.sync([]); // registration turned off: the contact is no longer ours
    await flush();
    assert.equal(reg.claim(new SipRequest('INVITE', parseUri(`sip:${token}@203.0.113.1`)!, h)), undefined);
  });
});
