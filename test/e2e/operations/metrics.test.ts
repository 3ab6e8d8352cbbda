import assert from 'node:assert/strict';
import { METRICS_TOKEN_SETTING } from '../../../api/index.js';
import { putSetting, sha256Hex } from '../../../store/index.js';
import {
  AccountServer,
  addCarrier,
  api,
  carrier,
  allocateSwitchPorts,
  carrierCallsDid,
  createAccountWithDid,
  startTestSwitch,
  type TestAccount,
} from '../support/harness.js';
import { nextPort } from '../../support/ports.js';
import { eventually, waitForBound } from '../../support/wait.js';

const PORTS = allocateSwitchPorts();
const CALLER = nextPort();
const SINK = nextPort();
const CARRIER = nextPort();
const DID = '+254711900001';
const OFF_DID = '+254711900002'; // owned but inactive: refused with a failed CDR

/** `name{labels} value` lines of a Prometheus text exposition, as label text -> value. */
function samples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`).exec(line);
    if (m) out.set(m[1] ?? '', Number(m[2]));
  }
  return out;
}

/** Issue 17, item 7: GET /metrics during a SIPp load, and its call counters equal the CDR rows afterwards. */
describe('e2e: GET /metrics', function () {
  this.timeout(90000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  const server = new AccountServer();
  const token = 'mt_test-operator-token';

  before(async () => {
    ctx = await startTestSwitch(PORTS);
    await server.listen();
    acct = await createAccountWithDid(ctx.db, DID);
    await ctx.db('numbers').insert({
      id: '00000000-0000-4000-8000-00000000e002',
      number: OFF_DID,
      account_id: acct.id,
      is_active: false,
      acquired_at: new Date().toISOString(),
      created_at: new Date().toISOString(),
    });
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
    server.verbs('/in', '<Response><Pause length="1"/><Hangup/></Response>');
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ webhook_voice_inbound: server.url('/in'), webhook_status: server.url('/status') });
    await putSetting(ctx.db, METRICS_TOKEN_SETTING, sha256Hex(token));
  });

  after(async () => {
    await server.close();
    await ctx?.sw.stop();
  });

  const scrape = (auth?: string) => fetch(`${ctx.baseUrl}/metrics`, { headers: auth ? { authorization: auth } : {} });

  it('refuses a scrape without the operator token or with another one', async () => {
    assert.equal((await scrape()).status, 401);
    assert.equal((await scrape('Bearer mt_wrong')).status, 401);
    assert.equal((await scrape(`Bearer ${acct.key}`)).status, 401, 'an API key is not the operator token');
  });

  it('shows live calls during a SIPp load, and afterwards its call counters equal the CDR counts', async () => {
    const load = carrierCallsDid({ sip: PORTS.sip, did: DID, port: CALLER, sink: SINK, calls: 12, extra: ['-r', '4'] });
    const during = await eventually(async () => {
      const res = await scrape(`Bearer ${token}`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      const t = await res.text();
      return (samples(t, 'simu_live_calls').get('') ?? 0) > 0 ? t : undefined;
    }, 'a live call on /metrics during the load');
    assert.ok((samples(during, 'simu_calls_per_second').get('') ?? 0) > 0, 'calls per second during the load');
    assert.equal(await load.exited, 0, load.output());
    const refused = carrierCallsDid({
      sip: PORTS.sip,
      did: OFF_DID,
      port: CALLER,
      sink: SINK,
      calls: 3,
      scenario: 'uac-unknown.xml',
    });
    assert.equal(await refused.exited, 0, refused.output());

    // Every CDR closed, then the figures and the rows side by side.
    await eventually(
      async () => {
        const live = await ctx.db('calls').whereIn('status', ['initiated', 'ringing', 'answered']).count({ n: '*' });
        return Number(live[0].n) === 0;
      },
      'every CDR closed',
      15000,
    );
    const rows = (await ctx
      .db('calls')
      .select('direction', 'status')
      .count({ n: '*' })
      .groupBy('direction', 'status')) as Array<{ direction: string; status: string; n: number | string }>;
    assert.ok(rows.length >= 2, `answered and refused calls both in the CDRs: ${JSON.stringify(rows)}`);
    const cdrs = rows.reduce((a, r) => a + Number(r.n), 0);
    const text = await eventually(
      async () => {
        const t = await (await scrape(`Bearer ${token}`)).text();
        return [...samples(t, 'simu_calls_total').values()].reduce((a, b) => a + b, 0) === cdrs ? t : undefined;
      },
      'the counters to reach the CDR count',
      5000,
    );
    const totals = samples(text, 'simu_calls_total');
    for (const r of rows)
      assert.equal(
        totals.get(`{direction="${r.direction}",status="${r.status}"}`),
        Number(r.n),
        `${r.direction}/${r.status}: ${text
          .split('\n')
          .filter((l) => l.startsWith('simu_calls_total'))
          .join('; ')}`,
      );
    assert.equal(totals.get('{direction="inbound",status="completed"}'), 12);
    assert.equal(totals.get('{direction="inbound",status="failed"}'), 3);
    const started = [...samples(text, 'simu_calls_started_total').values()].reduce((a, b) => a + b, 0);
    assert.equal(started, 15, 'every CDR counted once as started');
    assert.equal(samples(text, 'simu_live_calls').get(''), 0);
    assert.equal(samples(text, 'simu_rtpengine_up').get(''), 1);
    assert.ok(samples(text, 'simu_outbox_backlog').has(''));
    assert.ok(samples(text, 'simu_event_loop_delay_seconds').has('{quantile="0.99"}'));
    assert.equal(samples(text, 'simu_post_dial_delay_seconds_count').get('{direction="inbound"}'), 12);
  });

  it('per trunk: attempts, ASR and ACD of the outbound calls it carried, and the outbound post-dial delay', async () => {
    const uas = carrier({
      port: CARRIER,
      sink: SINK,
      calls: 2,
      scenario: 'uas-answer-hangup.xml',
      extra: ['-d', '1000'],
    });
    server.verbs('/out-long', '<Response><Pause length="5"/><Hangup/></Response>'); // the carrier hangs up first
    await waitForBound(CARRIER);
    for (let i = 0; i < 2; i++) {
      const r = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/originate', {
        to: '0712 345 678',
        from: DID,
        url: server.url('/out-long'),
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
    }
    assert.equal(await uas.exited, 0, uas.output());
    await eventually(
      async () => {
        const live = await ctx.db('calls').whereIn('status', ['initiated', 'ringing', 'answered']).count({ n: '*' });
        return Number(live[0].n) === 0;
      },
      'every CDR closed',
      15000,
    );
    const outbound = await ctx.db('calls').where({ direction: 'outbound', status: 'completed' });
    assert.equal(outbound.length, 2);
    const text = await eventually(
      async () => {
        const t = await (await scrape(`Bearer ${token}`)).text();
        return samples(t, 'simu_calls_total').get('{direction="outbound",status="completed"}') === 2 ? t : undefined;
      },
      'the outbound calls counted',
      5000,
    );
    assert.equal(samples(text, 'simu_trunk_attempts_total').get('{trunk="carrier",outcome="answered"}'), 2);
    assert.equal(samples(text, 'simu_trunk_asr_ratio').get('{trunk="carrier"}'), 1);
    const talk = outbound.reduce((a, c) => a + Number(c.talk_seconds), 0);
    assert.equal(samples(text, 'simu_trunk_acd_seconds').get('{trunk="carrier"}'), talk / 2, 'ACD = CDR talk / calls');
    assert.equal(samples(text, 'simu_post_dial_delay_seconds_count').get('{direction="outbound"}'), 2);
  });

  it('status callbacks: the latency histogram counts every delivery, the backlog drains to 0', async () => {
    await eventually(
      async () => {
        const t = await (await scrape(`Bearer ${token}`)).text();
        const pending = await ctx.db('event_outbox').where({ state: 'pending' }).count({ n: '*' });
        return samples(t, 'simu_outbox_backlog').get('') === 0 && Number(pending[0].n) === 0;
      },
      'the outbox to drain',
      20000,
    );
    const delivered = Number((await ctx.db('event_outbox').where({ state: 'delivered' }).count({ n: '*' }))[0].n);
    assert.ok(delivered > 0);
    const text = await eventually(
      async () => {
        const t = await (await scrape(`Bearer ${token}`)).text();
        const n = samples(t, 'simu_status_callback_latency_seconds_count').get('{outcome="delivered"}');
        return n === delivered ? t : undefined;
      },
      `the histogram to count ${delivered} deliveries`,
      5000,
    );
    const sum = samples(text, 'simu_status_callback_latency_seconds_sum').get('{outcome="delivered"}') ?? -1;
    assert.ok(sum > 0 && sum < delivered * 30, `latency sum ${sum} s`);
  });
});
