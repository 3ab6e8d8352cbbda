/**
 * A phone behind the front: baresip registered through Kamailio (deploy/kamailio/kamailio.cfg) over TCP receives
 * the calls that enter on every node, straight or through the front, since each node routes to it by the Path the
 * front added; after the node that took its REGISTER is SIGKILLed and declared gone, the survivors still reach it,
 * down the one connection the front holds. The scenario runs in front-phone-peer.ts, inside a network namespace.
 */
import assert from 'node:assert/strict';
import { namespacePeer, namespacePeersUsable } from '../../support/netns-peer.js';
import type { FrontPhoneReport, PhoneCall } from './front-phone-peer.js';

(namespacePeersUsable ? describe : describe.skip)('e2e: a TCP phone registered through the front', function () {
  this.timeout(240_000);
  const peer = namespacePeer<FrontPhoneReport>(import.meta.url, 'front-phone-peer.ts');
  let r: FrontPhoneReport;
  before(async function () {
    this.timeout(240_000);
    r = await peer();
  });

  const logs = () =>
    `${r.error ?? ''}\nphone:\n${r.phoneLog}\nfront:\n${r.frontLog}\nnodes:\n${(r.nodeLogs ?? []).join('\n')}\n${(r.dialEvents ?? []).join('\n')}`;
  const answered = (c: PhoneCall) => {
    const what = `the call through ${c.via}: ${JSON.stringify(c)}\n${logs()}`;
    assert.equal(c.carrierExit, 0, what);
    assert.equal(c.established, 1, `the phone answered ${what}`);
    assert.equal(c.inbound?.status, 'completed', what);
    assert.equal(c.dial?.status, 'completed', what);
    assert.ok((c.dial?.seconds ?? 0) >= 2, `the phone talked until the carrier hung up: ${what}`);
  };

  it('registers through the front: its node keeps the Path, over the connection the front holds', () => {
    assert.equal(r.error, undefined, logs());
    assert.ok(r.registeredOn, logs());
    assert.match(r.path ?? '', /received=/, `the front's Path, with the phone's connection: ${r.path}`);
  });

  it('answers a call entering on each node, and one through the front', () => {
    assert.deepEqual(
      r.before.map((c) => c.via),
      ['front_phone-1', 'front_phone-2', 'front_phone-3', 'front'],
    );
    for (const c of r.before) answered(c);
    assert.deepEqual(
      r.before.slice(0, 3).map((c) => c.node),
      ['front_phone-1', 'front_phone-2', 'front_phone-3'],
    );
  });

  it('its node SIGKILLed and gone: the survivors still reach it, through the front that holds its connection', () => {
    assert.equal(r.victimState, 'gone', logs());
    assert.equal(r.unreachableAfter, null, 'the binding through the front stays reachable');
    assert.equal(r.after.length, 4, logs());
    for (const c of r.after) answered(c);
    assert.ok(
      r.after.every((c) => c.node !== r.registeredOn),
      JSON.stringify(r.after.map((c) => c.node)),
    );
    assert.equal(new Set(r.after.map((c) => c.node)).size, 2, 'both survivors placed calls to it');
  });

  it('every request to the phone went down its one connection with the front', () => {
    assert.equal(r.phoneConnections, 1, logs());
    assert.equal(r.connectionsToPhone, 0, 'nothing opened a connection to the phone');
  });
});
