import { strict as assert } from 'node:assert';
import { createResponse, Dialog, parseUri, type SipRequest } from '../../sip/stack/index.js';
import type { DialogHost } from '../../sip/stack/dialog/dialog.js';
import { DialBridge } from '../../calls/transfer/dial-bridge.js';
import type { LiveCall } from '../../calls/live-call.js';
import { quietLogger } from '../support/logger.js';

/** A real Dialog whose requests are answered 200 at once and recorded. */
function dialog(sent: SipRequest[], tag: string): Dialog {
  const host: DialogHost = {
    send: async (req) => {
      sent.push(req);
      return createResponse(req, 200);
    },
    sendAck: () => {},
    via: (t) => `SIP/2.0/${t} 127.0.0.1:5060;branch=z9hG4bK${tag}${sent.length}`,
    contact: () => '<sip:127.0.0.1:5060>',
    forget: () => {},
  };
  return new Dialog(host, {
    role: 'uac',
    callId: `c-${tag}`,
    localTag: `l-${tag}`,
    remoteTag: `r-${tag}`,
    localParty: '<sip:a@x.example>',
    remoteParty: `<sip:${tag}@x.example>`,
    localSeq: 1,
    remoteSeq: 1,
    remoteTarget: parseUri(`sip:${tag}@192.0.2.1`)!,
    routeSet: [],
    transport: 'UDP',
  });
}

const bye = (d: Dialog) => d.receive({ method: 'BYE' } as SipRequest, { send: () => undefined } as never);

/** The part of a LiveCall a DialBridge uses, with the call's end hooks run by `end`. */
function fakeCall(caller: Dialog) {
  const hooks: Array<() => void> = [];
  const ended: string[] = [];
  const handedOver: Dialog[] = [];
  const call = {
    id: 'call-1',
    row: { id: 'call-1', from_number: '+254700000001', to_number: '+254700000002', end_user_id: 'u1' },
    dialog: caller,
    isEnding: false,
    life: {},
    onEnd: (fn: () => void) => hooks.push(fn),
    end: async (reason: string) => {
      ended.push(reason);
      call.isEnding = true;
      for (const fn of hooks.splice(0)) fn();
    },
    handOver: (d: Dialog) => handedOver.push(d),
  };
  return { call: call as unknown as LiveCall & typeof call, ended, handedOver };
}

const media = { offer: async () => '', answer: async () => '', legSide: () => undefined };

/** A Dial's bridge between a caller and a dialled leg (`phone`: the dialled leg is a phone's), all dialogs real. */
function dialBridge(phone: boolean) {
  const sent: SipRequest[] = [];
  const caller = dialog(sent, 'caller');
  const dialled = dialog(sent, 'dialled');
  const fake = fakeCall(caller);
  const leg = { dialog: dialled, tag: 'B', side: { profile: 'rtp' as const } };
  const bridge = new DialBridge({ media, log: quietLogger }, fake.call, leg, phone);
  const next = dialog(sent, 'next');
  const nextLeg = { dialog: next, tag: 'T1', side: { profile: 'rtp' as const }, party: '1003' };
  return { ...fake, sent, caller, dialled, bridge, next, nextLeg };
}

describe('calls/transfer: the bridge a Dial makes (DialBridge)', () => {
  it('the whole call ending first does not keep close() from sending the dialled leg its BYE', async () => {
    const { call, bridge, sent } = dialBridge(false);
    let hookRan = false;
    bridge.onEnd(() => (hookRan = true));
    await call.end('END.0200'); // the caller hung up: the call's end hooks run before the Dial's close()
    await bridge.close();
    assert.ok(hookRan);
    assert.deepEqual(
      sent.map((r) => `${r.method} ${r.headers.get('call-id')}`),
      ['BYE c-dialled'],
    );
  });

  it('a BYE of the dialled leg that came before the Dial listened for it still ends the wait', async () => {
    const { bridge, dialled } = dialBridge(false);
    bye(dialled); // the callee hung up while the Dial was still writing DIAL.0200 (a loaded store)
    let done = 0;
    bridge.onDialledBye(() => done++);
    assert.equal(done, 1);
  });

  it("a transfer by the dialled phone: the Dial waits for the new leg's BYE, not the old one's", async () => {
    const { bridge, dialled, next, nextLeg } = dialBridge(true);
    let done = 0;
    bridge.onDialledBye(() => done++);
    bridge.replaceLeg(bridge.legOf(dialled)!, nextLeg);
    bye(dialled);
    assert.equal(done, 0);
    assert.equal(bridge.dialled, next);
    bye(next);
    assert.equal(done, 1);
  });

  it("a transfer by the calling phone hands the call's caller leg over; the dialled party's BYE then ends the call", async () => {
    const { bridge, caller, dialled, next, nextLeg, handedOver, ended } = dialBridge(false);
    let done = 0;
    bridge.onDialledBye(() => done++);
    bridge.replaceLeg(bridge.legOf(caller)!, nextLeg);
    assert.deepEqual(handedOver, [next]);
    assert.equal(bridge.otherLeg(dialled)?.dialog, next);
    bye(dialled);
    assert.equal(done, 1);
    assert.deepEqual(ended, ['END.0200']);
  });
});
