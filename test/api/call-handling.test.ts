import assert from 'node:assert/strict';
import { insertCall, insertRecording } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from './harness.js';
import * as SH from './shapes.js';

/** Issue 19, items 3-4 at the API: the EndUser's call-handling fields (beyond the spec) and voicemail recordings. */
describe('api: end-user call handling and voicemail', () => {
  let h: ApiHarness;
  let t: Tenant;
  let user: { uuid: string };

  before(async () => {
    h = await ApiHarness.start(sqliteDb);
    t = await h.tenant('Handling');
    user = (await h.req('POST', '/api/users/create', { key: t.key, body: { email: 'vm@x.test' } })).body;
  });
  after(() => h.stop());

  it('a new end-user has nothing set: rings 20 s, no forward, no voicemail', async () => {
    const list = await h.req('GET', '/api/users', { key: t.key });
    const u = list.body[0];
    SH.assertShape(u, SH.END_USER, SH.END_USER_BEYOND_SPEC);
    assert.deepEqual(
      [u.dnd, u.forward_always, u.forward_busy, u.forward_no_answer, u.voicemail_enabled, u.voicemail_greeting_asset],
      [false, null, null, null, false, null],
    );
    assert.equal(u.no_answer_seconds, 20);
  });

  it('update sets DND, forwards to an extension and a number, voicemail; only supplied fields change', async () => {
    const up = await h.req('POST', '/api/users/update', {
      key: t.key,
      body: {
        uuid: user.uuid,
        dnd: true,
        forward_busy: '1002',
        forward_no_answer: '+254711000001',
        no_answer_seconds: 12,
        voicemail_enabled: true,
        voicemail_greeting_asset: 'greeting.wav',
      },
    });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.equal(up.body.dnd, true);
    assert.equal(up.body.forward_busy, '1002');
    assert.equal(up.body.forward_no_answer, '+254711000001');
    assert.equal(up.body.no_answer_seconds, 12);
    assert.equal(up.body.voicemail_greeting_asset, 'greeting.wav');
    const again = await h.req('POST', '/api/users/update', {
      key: t.key,
      body: { uuid: user.uuid, display_name: 'Vee', forward_busy: null },
    });
    assert.equal(again.body.forward_busy, null, 'null clears a forward');
    assert.equal(again.body.dnd, true, 'an absent field is left alone');
    assert.equal(again.body.voicemail_enabled, true);
    assert.equal(again.body.display_name, 'Vee');
  });

  it('refuses forward targets that are neither an extension nor E.164, and ring times out of bounds', async () => {
    for (const bad of [
      { forward_always: 'sip:evil@example.com' },
      { forward_busy: '0712345678' },
      { forward_no_answer: '+0123' },
      { no_answer_seconds: 2 },
      { no_answer_seconds: 600 },
      { voicemail_greeting_asset: '../etc/passwd' },
    ]) {
      const r = await h.req('POST', '/api/users/update', { key: t.key, body: { uuid: user.uuid, ...bad } });
      SH.assertError(r, 400, 'VALIDATION_ERROR');
    }
  });

  it('recordings list filters by end_user_uuid and shows voicemail_status', async () => {
    const c = await insertCall(h.db, {
      account_id: t.accountId,
      direction: 'internal',
      from_number: '1002',
      to_number: '1001',
      status: 'completed',
    });
    const base = { account_id: t.accountId, call_id: c.id, call_sid: c.sid, storage_path: '/nowhere.wav' };
    const vm = await insertRecording(h.db, { ...base, end_user_id: user.uuid, voicemail_status: 'new' });
    await insertRecording(h.db, base);
    const all = await h.req('GET', '/api/recordings', { key: t.key });
    assert.equal(all.body.length, 2);
    const mine = await h.req('GET', `/api/recordings?end_user_uuid=${user.uuid}`, { key: t.key });
    assert.equal(mine.status, 200);
    assert.deepEqual(
      mine.body.map((r: { uuid: string }) => r.uuid),
      [vm.id],
    );
    SH.assertShape(mine.body[0], SH.RECORDING, SH.RECORDING_BEYOND_SPEC);
    assert.equal(mine.body[0].end_user_uuid, user.uuid);
    assert.equal(mine.body[0].voicemail_status, 'new');
  });
});
