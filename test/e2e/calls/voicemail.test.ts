import assert from 'node:assert/strict';
import { decodeWav } from '../../../media/wav.js';
import { SipError } from '../../../sip/stack/index.js';
import { eventually } from '../../support/wait.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import {
  startTestSwitch,
  createAccountWithDid,
  addCarrier,
  carrier,
  api,
  RtpSink,
  speechSecondsOf,
  speechUlawFile,
  type TestAccount,
} from '../support/harness.js';
import { TestPhone } from '../support/phone.js';
import {
  phoneCallsAndSpeaks,
  phoneCallsMailbox,
  phoneSubscribesToMwi,
  type SippPhone,
} from '../support/voicemail-peers.js';

const SIPP = nextPorts(16); // SIPp phones' SIP ports: one per sippPhone() of this file (9 now), with room
const PHONE_SIP = nextPorts(3);
const PHONE_MEDIA = nextPorts(3);
const CARRIER = nextPort();
const CARRIER_SINK = nextPort();
const MAILBOX_SINK = nextPort();

/**
 * Issue 19, items 3-4 "done when", with real peers: SIPp phones (Bearer phone tokens) call an extension whose
 * end-user is in DND, does not answer or is busy; the call goes to voicemail (the message is recorded and has
 * speech, listed and downloadable through the API, VM.0300) or to the forward target (another extension, or a
 * number over a SIPp trunk billed as outbound); a SIPp phone subscribed to message-summary gets
 * `Messages-Waiting: yes`; `*97` plays the messages and deletes one with 7.
 */
describe('e2e: call handling and voicemail', function () {
  this.timeout(120000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  const users: Record<string, { uuid: string; ext: string; token: string }> = {};
  const phones: TestPhone[] = [];
  let ulaw: string;
  let sippPort = 0;

  before(async () => {
    ctx = await startTestSwitch();
    acct = await createAccountWithDid(ctx.db, '+254711400001');
    // Phones send from 127.0.0.1; the carrier is known by 127.0.0.2 so it only takes forwarded legs.
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw, ['127.0.0.2']);
    for (const name of ['alice', 'bob', 'carol']) {
      const u = await api(ctx.baseUrl, acct.key, 'POST', '/api/users/create', { email: `${name}@x.test` });
      const t = await api(ctx.baseUrl, acct.key, 'POST', '/api/phone-tokens/mint', { uuid: u.body.uuid });
      users[name] = { uuid: u.body.uuid, ext: u.body.extension_number, token: t.body.token };
    }
    ulaw = speechUlawFile('Hello Bob, this is Alice. Please call me back about the meeting tomorrow.');
  });

  after(async () => {
    for (const p of phones) await p.close();
    await ctx?.sw.stop();
  });

  function sippPhone(name: string): SippPhone {
    const u = users[name]!;
    return {
      ext: u.ext,
      token: u.token,
      domain: `${acct.id}.sip.test`,
      switchPort: ctx.ports.sip,
      port: SIPP + sippPort++,
    };
  }

  async function testPhone(name: string, n: number): Promise<TestPhone> {
    const u = users[name]!;
    const p = await new TestPhone(u.ext, u.token, acct.id, PHONE_SIP + n, PHONE_MEDIA + n, ctx.ports.sip).start();
    phones.push(p);
    assert.equal(await p.register(), 200);
    return p;
  }

  const handling = (name: string, body: Record<string, unknown>) =>
    api(ctx.baseUrl, acct.key, 'POST', '/api/users/update', { uuid: users[name]!.uuid, ...body });

  const messagesOf = async (name: string) =>
    (await api(ctx.baseUrl, acct.key, 'GET', `/api/recordings?end_user_uuid=${users[name]!.uuid}`)).body as Array<{
      uuid: string;
      call_uuid: string;
      duration_seconds: number;
      voicemail_status: string;
    }>;

  async function codesOf(callId: string): Promise<string[]> {
    return (await ctx.db('call_events').where({ call_id: callId }).orderBy('created_at')).map(
      (e: { code: string }) => e.code,
    );
  }

  async function heardInMessage(uuid: string): Promise<number> {
    const link = await api(ctx.baseUrl, acct.key, 'POST', '/api/recordings/download', { uuid });
    assert.equal(link.status, 200);
    const res = await fetch(link.body.url);
    assert.equal(res.status, 200);
    return speechSecondsOf(decodeWav(Buffer.from(await res.arrayBuffer())).samples);
  }

  it('DND: the call goes to voicemail; the message has speech, is the end-user’s and downloadable; MWI says yes', async () => {
    assert.equal((await handling('bob', { dnd: true, voicemail_enabled: true })).status, 200);
    const mwi = phoneSubscribesToMwi(sippPhone('bob'), 'Messages-Waiting: yes', 1);
    await eventually(() => ctx.sw.sip!.mwi.size === 1, 'the subscription', 10000).catch((e) => {
      mwi.kill();
      throw new Error(`${e}\n${mwi.output()}`);
    });
    const caller = phoneCallsAndSpeaks(sippPhone('alice'), users.bob!.ext, ulaw, { waitMs: 14000, loops: 4 });
    assert.equal(await caller.exited, 0, caller.output());
    await eventually(async () => (await messagesOf('bob')).length === 1, 'the message', 10000);
    const [msg] = await messagesOf('bob');
    assert.equal(msg!.voicemail_status, 'new');
    assert.ok(msg!.duration_seconds >= 2, `message of ${msg!.duration_seconds} s`);
    const speech = await heardInMessage(msg!.uuid);
    assert.ok(speech >= 1, `the message holds ${speech} s of speech`);
    assert.equal(await mwi.exited, 0, `the subscribed phone got Messages-Waiting: yes\n${mwi.output()}`);
    const call = (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${msg!.call_uuid}`)).body;
    assert.equal(call.direction, 'internal');
    assert.equal(call.to_number, users.bob!.ext);
    assert.equal(call.status, 'completed');
    assert.ok((await codesOf(msg!.call_uuid)).includes('VM.0300'));
  });

  it('no answer: the phones ring no_answer_seconds, then voicemail takes the call', async () => {
    await handling('bob', { dnd: false, voicemail_enabled: true, no_answer_seconds: 5 });
    const bob = phones[0] ?? (await testPhone('bob', 0));
    let rang = 0;
    bob.ua.onRequest('INVITE', (_req, srv) => {
      rang++;
      srv.send(180, 'Ringing'); // never answers
    });
    const started = Date.now();
    const caller = phoneCallsAndSpeaks(sippPhone('alice'), users.bob!.ext, ulaw, { waitMs: 19000, loops: 5 });
    assert.equal(await caller.exited, 0, caller.output());
    assert.equal(rang, 1, "bob's phone rang");
    await eventually(async () => (await messagesOf('bob')).length === 2, 'the second message', 10000).catch((e) => {
      throw new Error(`${e}\n${caller.output()}`);
    });
    const newest = (await messagesOf('bob')).find((m) => Date.parse((m as any).created_at) > started);
    assert.ok(newest, 'a message from this call');
    assert.ok((await heardInMessage(newest!.uuid)) >= 1, 'the message has speech');
  });

  it('busy: forward on busy to another extension, which answers and hears the caller', async () => {
    await handling('bob', { dnd: false, forward_busy: users.carol!.ext });
    const bob = phones[0] ?? (await testPhone('bob', 0));
    bob.ua.onRequest('INVITE', (_req, srv) => void srv.send(486, 'Busy Here'));
    const carol = await testPhone('carol', 1);
    const answered = carol.answerNext();
    const caller = phoneCallsAndSpeaks(sippPhone('alice'), users.bob!.ext, ulaw, { waitMs: 7000, loops: 2 });
    await Promise.race([answered, caller.exited.then(() => assert.fail(`carol never answered\n${caller.output()}`))]);
    assert.equal(await caller.exited, 0, caller.output());
    assert.ok(carol.sink.speechSeconds() >= 1, `carol heard ${carol.sink.speechSeconds()} s`);
    const call = (await api(ctx.baseUrl, acct.key, 'GET', '/api/calls/?limit=1')).body.calls[0];
    assert.equal(call.to_number, users.bob!.ext);
    const codes = await codesOf(call.uuid);
    assert.ok(codes.includes('FWD.0100'), codes.join(' '));
    assert.ok(codes.includes('CALL.0200'), 'answered by the forward target');
  });

  it('no answer: forward to a number over a SIPp trunk, billed as the account’s outbound call', async () => {
    await handling('bob', { forward_busy: null, forward_no_answer: '+254711999001', voicemail_enabled: false });
    phones[0]!.ua.onRequest('INVITE', (_req, srv) => void srv.send(180, 'Ringing'));
    const sink = await new RtpSink().bind(CARRIER_SINK);
    const trunk = carrier({ port: CARRIER, sink: CARRIER_SINK });
    try {
      const caller = phoneCallsAndSpeaks(sippPhone('alice'), users.bob!.ext, ulaw, { waitMs: 12000, loops: 3 });
      assert.equal(await caller.exited, 0, caller.output());
      assert.equal(await trunk.exited, 0, trunk.output());
      assert.ok(sink.speechSeconds() >= 1, `the number heard ${sink.speechSeconds()} s`);
    } finally {
      sink.close();
      trunk.kill();
    }
    const parent = (await ctx.db('calls').where({ direction: 'internal' }).orderBy('created_at', 'desc').first())!;
    await eventually(
      async () => (await ctx.db('calls').where({ parent_call_id: parent.id }).first())?.ended_at,
      'the forwarded leg ends',
      10000,
    );
    const leg = await ctx.db('calls').where({ parent_call_id: parent.id }).first();
    assert.equal(leg.direction, 'outbound');
    assert.equal(leg.to_number, '+254711999001');
    assert.equal(leg.from_number, acct.did, 'presents the account’s DID');
    assert.equal(leg.status, 'completed');
    assert.ok(Number(leg.cost_cents) > 0, `billed ${leg.cost_cents} cents at the outbound rate`);
  });

  it('*97 plays the messages (they are no longer new), then 7 deletes one', async () => {
    const before = await messagesOf('bob');
    assert.equal(before.length, 2);
    const sink = await new RtpSink().bind(MAILBOX_SINK);
    try {
      const listen = phoneCallsMailbox(sippPhone('bob'), MAILBOX_SINK);
      assert.equal(await listen.exited, 0, listen.output());
      // The intro, both messages (each a few seconds of speech) and their menus.
      assert.ok(sink.speechSeconds() >= 8, `the phone heard ${sink.speechSeconds()} s`);
    } finally {
      sink.close();
    }
    assert.deepEqual(
      (await messagesOf('bob')).map((m) => m.voicemail_status),
      ['saved', 'saved'],
    );
    const del = phoneCallsMailbox(sippPhone('bob'), MAILBOX_SINK, { key: '7', keyAfterMs: 8000 });
    assert.equal(await del.exited, 0, del.output());
    const after = await messagesOf('bob');
    assert.equal(after.length, 1, 'one message was deleted');
  });

  it('a message deleted through the API is NOTIFYed to the subscribed phone', async () => {
    const [left] = await messagesOf('bob');
    assert.equal(left?.voicemail_status, 'saved');
    const subscribed = ctx.sw.sip!.mwi.size;
    const mwi = phoneSubscribesToMwi(sippPhone('bob'), 'Voice-Message: 0/0', 1);
    await eventually(() => ctx.sw.sip!.mwi.size > subscribed, 'the subscription', 10000);
    // No wait for its first NOTIFY (0/1): the switch sends the change's after that one is answered, as it then is.
    const del = await api(ctx.baseUrl, acct.key, 'POST', '/api/recordings/delete', { uuid: left!.uuid });
    assert.equal(del.status, 200);
    assert.equal(await mwi.exited, 0, `the phone got Voice-Message: 0/0\n${mwi.output()}`);
  });

  it('offline: no phone registered and voicemail on, the call goes straight to the mailbox', async () => {
    await handling('alice', { voicemail_enabled: true });
    const caller = phoneCallsAndSpeaks(sippPhone('bob'), users.alice!.ext, ulaw, { waitMs: 12000, loops: 4 });
    assert.equal(await caller.exited, 0, caller.output());
    await eventually(async () => (await messagesOf('alice')).length === 1, "alice's message", 10000);
    const [msg] = await messagesOf('alice');
    assert.ok((await heardInMessage(msg!.uuid)) >= 1, 'the message has speech');
    assert.ok((await codesOf(msg!.call_uuid)).includes('VM.0300'));
  });

  it('refuses a SUBSCRIBE for another event package with 489', async () => {
    const bob = phones[0]!;
    const res = await bob.ua
      .request(`sip:${bob.ext}@${bob.domain}`, {
        method: 'SUBSCRIBE',
        proxy: bob.proxy,
        headers: { Event: 'presence', Authorization: `Bearer ${bob.token}`, Expires: '60' },
      })
      .catch((e: unknown) => (e instanceof SipError ? e : Promise.reject(e)));
    assert.equal((res as { status: number }).status, 489);
  });
});
