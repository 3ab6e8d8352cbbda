import assert from 'node:assert/strict';
import { insertTrunk, setTrunkOptions } from '../../../store/index.js';
import { nextPort } from '../../support/ports.js';
import { eventually, waitForBound } from '../../support/wait.js';
import {
  startTestSwitch,
  createAccountWithDid,
  AccountServer,
  RtpSink,
  carrier,
  type SippRun,
} from '../support/harness.js';

/**
 * Issue 17 "done when" (item 4): a SIPp registrar that challenges with 401 registers the trunk, sees it refresh,
 * and an INVITE it sends to the registered contact becomes an inbound call of that trunk, although its source
 * address is none of the trunk's inbound addresses.
 */
describe('e2e: upstream registration of a trunk to a SIPp registrar', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  const server = new AccountServer();
  const sink = new RtpSink();
  let sipp: SippRun | undefined;
  const REGISTRAR = nextPort();
  const SINK = nextPort();
  const DID = '+254711800001';

  before(async () => {
    ctx = await startTestSwitch();
    await server.listen();
    await sink.bind(SINK);
    await createAccountWithDid(ctx.db, DID);
    await ctx
      .db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/inbound') });
    server.verbs('/inbound', '<Response><Say>Registered.</Say><Hangup/></Response>');
  });

  after(async () => {
    sipp?.kill();
    sink.close();
    await server.close();
    await ctx?.sw.stop();
  });

  it('registers with digest, refreshes, and takes the INVITE sent to the registered contact', async () => {
    sipp = carrier({ port: REGISTRAR, sink: SINK, scenario: 'uas-registrar.xml', extra: ['-key', 'did', DID] });
    await waitForBound(REGISTRAR);
    const trunk = await insertTrunk(ctx.db, {
      name: 'upstream',
      host: '127.0.0.1',
      port: REGISTRAR,
      transport: 'udp',
      username: 'simu-trunk',
      password: 'carrier-secret',
      // Calls are recognised by the registered contact, not by address: this one never matches.
      inbound_addresses: ['192.0.2.1'],
    });
    await setTrunkOptions(ctx.db, 'upstream', { register: true });
    await ctx.sw.sip!.refreshTrustedAddresses(); // the 5 s sync, now

    const state = async () => (await ctx.db('trunks').where({ id: trunk.id }).first()).registration;
    await eventually(async () => (await state()) === 'registered', 'trunk registered', 10000);
    // The registrar granted 4 s: the refresh (challenged again) comes after 2 s, then the registrar's INVITE.
    const call = await eventually(
      async () => ctx.db('calls').where({ to_number: DID, direction: 'inbound' }).first(),
      'an inbound call to the DID',
      20000,
    ).catch((e: Error) => {
      sipp!.kill();
      throw new Error(`${e.message}\n${sipp!.output()}`);
    });
    await eventually(
      async () => (await ctx.db('calls').where({ id: call.id }).first()).status === 'completed',
      'the inbound call completed',
      20000,
    );
    assert.equal(await sipp.exited, 0, sipp.output());
    assert.equal(await state(), 'registered');
  });
});
