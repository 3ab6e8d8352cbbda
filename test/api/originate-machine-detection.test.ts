import assert from 'node:assert/strict';
import { setRate } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from './harness.js';
import * as SH from './shapes.js';

/** Originate's answering machine detection fields (beyond the spec): what reaches the engine, what is refused. */
describe('api: originate with machine detection', function () {
  this.timeout(30000);
  let h: ApiHarness;
  let t: Tenant;
  const DID = '+254711800002';

  before(async () => {
    h = await ApiHarness.start(sqliteDb);
    t = await h.tenant('Amd', 100_000, DID);
    await setRate(h.db, 'outbound', 100);
  });
  after(async () => h?.stop());

  const originate = (extra: Record<string, unknown>) =>
    h.req('POST', '/api/calls/originate', {
      key: t.key,
      body: { to: '+254712345678', from: DID, url: 'http://x.test/', ...extra },
    });

  it('the mode, thresholds and async callback reach the engine; the call has no answered_by until decided', async () => {
    const r = await originate({
      machine_detection: 'DetectMessageEnd',
      machine_detection_params: { timeout_ms: 20000, greeting_ms: 2000, max_words: 5 },
      async_amd: true,
      async_amd_status_callback: 'https://hooks.example.com/amd',
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal('answered_by' in r.body, false, 'absent until decided');
    const placed = h.engine.originated.at(-1)!;
    assert.deepEqual(placed.machineDetection, {
      mode: 'DetectMessageEnd',
      params: { timeoutMs: 20000, greetingMs: 2000, maxWords: 5 },
      async: true,
      statusCallbackUrl: 'https://hooks.example.com/amd',
    });
    const plain = await originate({});
    assert.equal(plain.status, 201);
    assert.equal(h.engine.originated.at(-1)!.machineDetection, undefined);
  });

  it('bad detection fields are a 400 naming the field', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ machine_detection: 'Yes' }, /machine_detection.*Enable/],
      [{ machine_detection: 'Enable', machine_detection_params: { greeting_ms: 50 } }, /greeting_ms/],
      [{ machine_detection: 'Enable', machine_detection_params: { beep_hz: 1000 } }, /beep_hz/],
      [{ machine_detection_params: { greeting_ms: 2000 } }, /"machine_detection_params" needs "machine_detection"/],
      [{ async_amd: true }, /"async_amd" needs "machine_detection"/],
      [{ machine_detection: 'Enable', async_amd_status_callback: 'https://a.test/' }, /needs "async_amd": true/],
      [
        { machine_detection: 'Enable', async_amd: true, async_amd_status_callback: 'ftp://a.test/' },
        /async_amd_status_callback/,
      ],
      [
        { machine_detection: 'Enable', async_amd: true, async_amd_status_callback: 'http://169.254.169.254/amd' },
        /"async_amd_status_callback" points at a link-local address/,
      ],
    ];
    for (const [extra, detail] of cases) {
      const r = await originate(extra);
      SH.assertError(r, 400, 'VALIDATION_ERROR');
      assert.match(r.body.detail, detail, JSON.stringify(extra));
    }
  });
});
