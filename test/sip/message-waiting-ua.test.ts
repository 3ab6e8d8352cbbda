import assert from 'node:assert/strict';
import { MessageWaiting, MWI_LIMITS } from '../../sip/index.js';
import dgram from 'node:dgram';
import { createResponse, parseMessage, UserAgent, type SipRequest, type SipResponse } from '../../sip/stack/index.js';
import { insertAccount, insertCall, insertRecording, type Db } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { quietLogger } from '../support/logger.js';
import { nextPort } from '../support/ports.js';
import { eventually } from '../support/wait.js';

/**
 * The message-waiting notifier (sip/message-waiting.ts) between two real user agents over UDP on loopback: the
 * switch side with MessageWaiting over a real store, the phone a raw UDP socket that keeps every NOTIFY and answers
 * it 200 (our own stack has no subscription dialogs to take them). Authentication is the only part stubbed (the
 * registrar's is tested on its own): the identity it hands back is the subscriber's.
 */
describe('sip: message-summary subscriptions (RFC 3842 over RFC 6665)', function () {
  this.timeout(20000);
  let db: Db;
  let accountId: string;
  let sw: UserAgent;
  const phone = dgram.createSocket('udp4');
  let waiting: ((res: SipResponse) => void) | undefined;
  let seq = 0;
  let mwi: MessageWaiting;
  const SW = nextPort();
  const PHONE = nextPort();
  const notifies: SipRequest[] = [];
  /** NOTIFYs of the subscription with this Call-ID are kept unanswered in `held`. */
  let holdCallId: string | undefined;
  let lastCallId = '';
  const held: SipRequest[] = [];

  /** A new voicemail for end-user eu-1: a call from 1002 to 1001 and its recording. */
  const newVoicemail = async (storagePath: string): Promise<void> => {
    const c = await insertCall(db, {
      account_id: accountId,
      direction: 'internal',
      from_number: '1002',
      to_number: '1001',
    });
    await insertRecording(db, {
      account_id: accountId,
      call_id: c.id,
      call_sid: c.sid,
      storage_path: storagePath,
      end_user_id: 'eu-1',
      voicemail_status: 'new',
    });
  };

  before(async () => {
    db = await sqliteDb.open();
    accountId = (await insertAccount(db, 'mwi')).id;
    sw = new UserAgent({ logger: quietLogger });
    await sw.listen({ udp: { host: '127.0.0.1', port: SW } });
    mwi = new MessageWaiting({
      ua: sw,
      db,
      log: quietLogger,
      authenticate: () => async () => ({ accountId, endUserId: 'eu-1', extension: '1001' }),
    });
    sw.onRequest('SUBSCRIBE', (req, srv) => mwi.subscribe(req, srv), { inDialog: true });
    phone.on('message', (data) => {
      const parsed = parseMessage(data);
      if (!parsed.ok) return;
      const m = parsed.message;
      if (!m.isRequest) return waiting?.(m as SipResponse);
      notifies.push(m as SipRequest);
      if (m.callId === holdCallId) return void held.push(m as SipRequest);
      phone.send(createResponse(m as SipRequest, 200).toBuffer(), SW, '127.0.0.1');
    });
    await new Promise<void>((r) => phone.bind(PHONE, '127.0.0.1', () => r()));
  });

  after(async () => {
    mwi.close();
    phone.close();
    await sw.close();
    await db.destroy();
  });

  /**
   * A SUBSCRIBE from the phone; resolves with the switch's final response. With `dialog`, a refresh in that
   * subscription's dialog (its Call-ID, the phone's tag, the switch's To tag) with the CSeq given.
   */
  function subscribe(
    expires: string,
    event = 'message-summary',
    dialog?: { callId: string; fromTag: string; toTag: string; cseq: number },
  ): Promise<SipResponse> {
    seq++;
    if (!dialog) lastCallId = `mwi-${seq}-${Date.now()}@127.0.0.1`;
    const text = [
      `SUBSCRIBE sip:1001@a.sip.test SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${PHONE};branch=z9hG4bK-mwi-${seq}-${Date.now()};rport`,
      `From: <sip:1001@a.sip.test>;tag=${dialog?.fromTag ?? `phone${seq}`}`,
      `To: <sip:1001@a.sip.test>${dialog ? `;tag=${dialog.toTag}` : ''}`,
      `Call-ID: ${dialog?.callId ?? lastCallId}`,
      `CSeq: ${dialog?.cseq ?? 1} SUBSCRIBE`,
      `Contact: <sip:1001@127.0.0.1:${PHONE}>`,
      `Event: ${event}`,
      `Expires: ${expires}`,
      `Max-Forwards: 70`,
      `Content-Length: 0`,
      '',
      '',
    ].join('\r\n');
    return new Promise((resolve) => {
      waiting = (res) => {
        if (res.status < 200) return;
        waiting = undefined;
        resolve(res);
      };
      phone.send(text, SW, '127.0.0.1');
    });
  }

  it('answers 200 with the bounded Expires and NOTIFYs the counts at once, in the subscription dialog', async () => {
    const res = await subscribe('999999');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('expires'), String(MWI_LIMITS.maxExpires));
    await eventually(() => notifies.length === 1, 'the first NOTIFY', 5000);
    const n = notifies[0]!;
    assert.equal(n.headers.get('event'), 'message-summary');
    assert.equal(n.headers.get('content-type'), 'application/simple-message-summary');
    assert.match(n.headers.get('subscription-state') ?? '', /^active;expires=\d+/);
    assert.equal(n.callId, res.headers.get('call-id'));
    assert.equal(n.fromTag, res.toTag, 'From tag of the NOTIFY = To tag of our 200');
    assert.match(n.text, /Messages-Waiting: no\r\n/);
    assert.match(n.text, /Voice-Message: 0\/0/);
  });

  it('a new message is NOTIFYed as Messages-Waiting: yes with the new count', async () => {
    await newVoicemail('/x.wav');
    await mwi.changed(accountId, 'eu-1');
    assert.equal(notifies.length, 2);
    assert.match(notifies[1]!.text, /Messages-Waiting: yes\r\n/);
    assert.match(notifies[1]!.text, /Voice-Message: 1\/0/);
    await mwi.changed(accountId, 'someone-else');
    assert.equal(notifies.length, 2, "another end-user's change is not sent");
  });

  it('one NOTIFY at a time: a change while the first is unanswered goes after its answer, with the counts then', async () => {
    const newCount = (n: SipRequest) => Number(/Voice-Message: (\d+)\//.exec(n.text)?.[1]);
    const cseqs = () => [...new Set(held.map((n) => n.cseq.seq))];
    const subscribed = subscribe('600');
    holdCallId = lastCallId; // before the first NOTIFY can come back
    assert.equal((await subscribed).status, 200);
    await eventually(() => held.length > 0, 'the first NOTIFY', 5000);
    await newVoicemail('/y.wav');
    const change = mwi.changed(accountId, 'eu-1');
    await new Promise((r) => setTimeout(r, 300)); // a NOTIFY sent at once would be here by now
    assert.deepEqual(cseqs(), [1], 'no second NOTIFY while the first is unanswered');
    holdCallId = undefined;
    for (const n of held) phone.send(createResponse(n, 200).toBuffer(), SW, '127.0.0.1');
    await change;
    const mine = notifies.filter((n) => n.callId === lastCallId);
    const second = mine.find((n) => n.cseq.seq === 2);
    assert.ok(second, 'the change is NOTIFYed once the first is answered');
    assert.equal(newCount(second), newCount(held[0]!) + 1, 'with the counts after the change');
  });

  describe('a refresh in the subscription dialog (RFC 6665 §4.1.2.1)', () => {
    /** A new subscription, its first NOTIFY answered; returns the dialog a refresh is sent in. */
    const subscribed = async () => {
      const res = await subscribe('600');
      assert.equal(res.status, 200);
      const callId = lastCallId;
      await eventually(() => notifies.some((n) => n.callId === callId), 'the first NOTIFY', 5000);
      return { callId, fromTag: res.fromTag!, toTag: res.toTag!, cseq: 1 };
    };
    const mine = (callId: string) => notifies.filter((n) => n.callId === callId);

    it('extends it: 200 with the new Expires, a NOTIFY next in CSeq order, and later changes still NOTIFYed', async () => {
      const d = await subscribed();
      const size = mwi.size;
      const res = await subscribe('900', 'message-summary', { ...d, cseq: 2 });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('expires'), '900');
      assert.equal(res.toTag, d.toTag, 'answered in the same dialog');
      await eventually(() => mine(d.callId).length === 2, 'the NOTIFY of the refresh', 5000);
      const refreshed = mine(d.callId)[1]!;
      assert.equal(refreshed.cseq.seq, 2);
      assert.match(refreshed.headers.get('subscription-state') ?? '', /^active;expires=(89\d|900)$/);
      assert.equal(mwi.size, size, 'the same subscription, not a second one');
      await newVoicemail('/refresh.wav');
      await mwi.changed(accountId, 'eu-1');
      await eventually(() => mine(d.callId).length === 3, 'the change NOTIFYed', 5000);
    });

    it('RFC 6665 §4.2.1.4: Expires 0 ends it with a NOTIFY terminated;reason=deactivated, not timeout', async () => {
      const d = await subscribed();
      const size = mwi.size;
      const res = await subscribe('0', 'message-summary', { ...d, cseq: 2 });
      assert.equal(res.status, 200);
      await eventually(() => mine(d.callId).length === 2, 'the last NOTIFY', 5000);
      assert.equal(mine(d.callId)[1]!.headers.get('subscription-state'), 'terminated;reason=deactivated');
      assert.equal(mwi.size, size - 1);
    });

    it('a dialog the switch does not hold gets 481; a CSeq not above the last gets 500', async () => {
      const d = await subscribed();
      assert.equal((await subscribe('600', 'message-summary', { ...d, toTag: 'not-ours', cseq: 2 })).status, 481);
      assert.equal((await subscribe('600', 'message-summary', { ...d, cseq: 1 })).status, 500);
      assert.equal((await subscribe('600', 'message-summary', { ...d, cseq: 3 })).status, 200, 'still held');
    });
  });

  it('RFC 6665 §4.4.3: a new SUBSCRIBE with Expires 0 (a fetch) gets one NOTIFY of the state, terminated', async () => {
    const size = mwi.size;
    assert.equal((await subscribe('0')).status, 200);
    const callId = lastCallId;
    await eventually(() => notifies.some((n) => n.callId === callId), 'the NOTIFY', 5000);
    const n = notifies.find((x) => x.callId === callId)!;
    assert.equal(n.headers.get('subscription-state'), 'terminated;reason=timeout');
    assert.match(n.body.toString(), /^Messages-Waiting: (yes|no)/);
    assert.equal(mwi.size, size, 'nothing held');
  });

  it('an unknown event package gets 489 with Allow-Events', async () => {
    const res = await subscribe('60', 'presence');
    assert.equal(res.status, 489);
    assert.equal(res.headers.get('allow-events'), 'message-summary');
  });

  it('a subscription that runs out ends with a terminated NOTIFY', async () => {
    const min = MWI_LIMITS.minExpires;
    MWI_LIMITS.minExpires = 1;
    try {
      const before = mwi.size;
      assert.equal((await subscribe('1')).status, 200);
      const callId = lastCallId;
      assert.equal(mwi.size, before + 1);
      await eventually(
        () =>
          notifies.some(
            (n) => n.callId === callId && n.headers.get('subscription-state') === 'terminated;reason=timeout',
          ),
        'the terminating NOTIFY',
        5000,
      );
      assert.equal(mwi.size, before);
    } finally {
      MWI_LIMITS.minExpires = min;
    }
  });
});
