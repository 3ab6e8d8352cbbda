import assert from 'node:assert/strict';
import { roomLogger } from '../../config/index.js';
import { StoreAdmission, post } from '../../billing/index.js';
import type { EventPublisher } from '../../events/index.js';
import { SipError } from '../../sip/stack/index.js';
import { insertAccount, insertCall, setRate, updateAccount, type CallRow, type Db } from '../../store/index.js';
import { runDial } from '../../calls/flows/dial-verb.js';
import type { FlowServices } from '../../calls/flows/flow-services.js';
import { ChildLeg } from '../../calls/child-leg.js';
import { CallLifecycle } from '../../calls/call-lifecycle.js';
import type { LiveCall } from '../../calls/live-call.js';
import type { DialOptions } from '../../verbs/index.js';
import { sqliteDb } from '../support/db.js';

/**
 * Issue 22, item 8, at the level of the Dial flow: the real store and the real StoreAdmission (its CPS window on a
 * clock the test moves); the carrier and rtpengine are stand-ins that count what the flow asks of them. The e2e
 * side (concurrency, suspension, balance through a SIPp carrier) is test/e2e/calls/dial-admission.test.ts.
 */
describe('calls: a Dial leg passes admission (CPS, and the held slot is released)', () => {
  let db: Db;
  let now: number;
  const log = roomLogger('calls');
  const events = { emit: async () => undefined } as unknown as EventPublisher;

  before(async () => {
    db = await sqliteDb.open();
    await setRate(db, 'outbound', 100);
  });
  after(async () => db?.destroy());

  async function setup(caps: { max_cps: number; max_concurrent_calls: number }) {
    const account = await insertAccount(db, 'Dialler');
    await updateAccount(db, account.id, caps);
    await post(db, { accountId: account.id, direction: 'credit', kind: 'topup', amountCents: 100_000 });
    now = 1_000_000;
    const admission = new StoreAdmission(db, { now: () => now });
    // The call that dials was itself admitted (it is in the account's CPS window and live count).
    const parentRow = await admission.admit({ accountId: account.id }, () =>
      insertCall(db, {
        account_id: account.id,
        direction: 'inbound',
        from_number: '+254733000001',
        to_number: '+254711000001',
        status: 'answered',
      }),
    );
    const invites: string[] = [];
    const emitted: { code: string; data: Record<string, unknown> }[] = [];
    const parent = {
      row: parentRow,
      id: parentRow.id,
      isEnding: false,
      dialog: undefined,
      life: { emit: async (code: string, data: Record<string, unknown> = {}) => void emitted.push({ code, data }) },
      onEnd: () => undefined,
      startSessionRecording: async () => {
        throw new Error('recording store unavailable');
      },
    } as unknown as LiveCall;
    const deps = {
      db,
      config: { publicHost: 'simu.test' },
      log,
      events,
      admission,
      media: {
        hasSession: () => true,
        offerFromIvr: async () => 'v=0\r\n',
        returnToIvr: async () => undefined,
      },
      sip: {
        trunks: {
          outboundPlan: async () => ({
            targets: [{ trunk: { name: 'fake' }, why: 'test', requestUri: (n: string) => `sip:${n}@127.0.0.1:5999` }],
            skipped: [],
          }),
        },
        ua: {
          createUAC: async (uri: string) => {
            invites.push(uri);
            throw new SipError('SIP_FINAL', 486, 'Busy Here');
          },
        },
      },
      openChildLeg: async (p: LiveCall, from: string, to: string) => {
        const row: CallRow = await insertCall(db, {
          account_id: p.row.account_id,
          direction: 'outbound',
          from_number: from,
          to_number: to,
          parent_call_id: p.id,
        });
        return new ChildLeg(new CallLifecycle({ db, events, log }, row), undefined);
      },
    } as unknown as FlowServices;
    const children = () => db('calls').where({ parent_call_id: parentRow.id }).orderBy('created_at');
    const live = async () =>
      (await db('calls').where({ account_id: account.id }).whereIn('status', ['initiated', 'ringing', 'answered']))
        .length;
    return { deps, parent, invites, emitted, children, live };
  }

  const options = (record: DialOptions['record'] = 'do-not-record'): DialOptions => ({
    timeout: 5,
    timeLimit: 60,
    record,
    signal: new AbortController().signal,
  });
  const toPstn = { kind: 'number', number: '+254722000001' } as const;

  it('a Dial in the same second as the call that dials it, at max_cps 1, is refused LIMIT.0430 and not dialled', async () => {
    const t = await setup({ max_cps: 1, max_concurrent_calls: 10 });
    const result = await runDial(t.deps, t.parent, toPstn, options());
    assert.deepEqual(result, { status: 'failed', durationSeconds: 0 });
    assert.deepEqual(t.invites, [], 'no INVITE');
    assert.equal((await t.children()).length, 0, 'no row for the refused leg');
    assert.deepEqual(t.emitted, [
      { code: 'DIAL.0300', data: { DialCallStatus: 'failed', DialCallDuration: 0, reason: 'LIMIT.0430' } },
    ]);
    // A second later the window has room: the same Dial is placed (the stand-in carrier answers busy).
    now += 1001;
    const next = await runDial(t.deps, t.parent, toPstn, options());
    assert.equal(next.status, 'busy');
    assert.equal(t.invites.length, 1);
    const [leg] = await t.children();
    assert.equal(leg.status, 'failed');
    assert.equal(leg.reason_code, 'END.0486');
  });

  it('a failed leg gives its concurrency slot back: at max_concurrent 2 the next Dial is admitted again', async () => {
    const t = await setup({ max_cps: 100, max_concurrent_calls: 2 });
    for (let i = 0; i < 3; i++) {
      now += 10;
      assert.equal((await runDial(t.deps, t.parent, toPstn, options())).status, 'busy');
      assert.equal(await t.live(), 1, 'only the parent is live after each Dial');
    }
    assert.equal(t.invites.length, 3);
  });

  it('a Dial that throws after its leg was admitted still closes the leg (no live row left holding the slot)', async () => {
    const t = await setup({ max_cps: 100, max_concurrent_calls: 2 });
    await assert.rejects(runDial(t.deps, t.parent, toPstn, options('record-from-ringing')), /recording store/);
    const [leg] = await t.children();
    assert.equal(leg.status, 'failed');
    assert.equal(leg.reason_code, 'END.0500');
    assert.equal(await t.live(), 1);
  });
});
