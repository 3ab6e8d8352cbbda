import assert from 'node:assert/strict';
import { readWav } from '../../../media/index.js';
import { toneAmplitude, toneSeconds } from '../../support/tones.js';
import { eventually } from '../../support/wait.js';
import { api } from '../support/harness.js';
import { useCarrierSwitch } from '../support/carrier-switch.js';
import { ToneCallers, heardSince } from '../support/conference-legs.js';

const TONES = [440, 660, 880] as const;

describe('Conference: <Dial><Conference> mixes every participant but itself (issue 18)', function () {
  this.timeout(120_000);
  const DID = '+254711900181';
  const t = useCarrierSwitch({ did: DID });
  const callers = new ToneCallers();
  const legs = callers.legs;

  afterEach(() => callers.stop());
  after(() => callers.remove());

  const join = (tone: number, staySeconds: number) =>
    callers.call({ sip: t.ctx.ports.sip, did: DID, tone, staySeconds });

  async function conference() {
    const list = (await api(t.ctx.baseUrl, t.acct.key, 'GET', '/api/conferences')).body.conferences;
    return list[0] as { sid: string; participant_count: number; status: string } | undefined;
  }

  async function participants(sid: string): Promise<Array<{ call_sid: string; muted: boolean }>> {
    return (await api(t.ctx.baseUrl, t.acct.key, 'GET', `/api/conferences/${sid}/participants`)).body.participants;
  }

  /** Asserts each leg hears the tones of `audible` legs (by index) and not the others, its own never. */
  function assertHearing(since: number, audible: (listener: number, speaker: number) => boolean): void {
    const report: string[] = [];
    let ok = true;
    legs.forEach((listener, i) => {
      const audio = heardSince(listener, since);
      report.push(`${listener.tone} Hz leg: ${(audio.length / 8000).toFixed(1)} s captured`);
      if (audio.length < 8000) ok = false;
      legs.forEach((speaker, j) => {
        // Heard: for at least a second of the 2.5, judged 50 ms at a time (packets' phase jumps do not cancel it).
        // Not heard: the whole stretch holds less than a faint trace of it (phase jumps only make that smaller).
        const amp = toneAmplitude(audio, speaker.tone);
        const seconds = toneSeconds(audio, speaker.tone, 2000);
        const expect = i !== j && audible(i, j);
        report.push(
          `${listener.tone} Hz leg hears ${speaker.tone} Hz for ${seconds} s, ${amp.toFixed(0)} overall (expected ${expect})`,
        );
        if (expect ? seconds < 1 : amp > 400) ok = false;
      });
    });
    assert.ok(ok, report.join('\n'));
  }

  it('three callers playing 440, 660 and 880 Hz: each hears the two others and not itself; a muted one is heard by nobody', async () => {
    await t.setInboundUrl(t.server.url('/conference'));
    t.server.verbs(
      '/conference',
      '<Response><Dial record="record-from-answer"><Conference beep="false">standup</Conference></Dial></Response>',
    );
    for (const tone of TONES) {
      const before = (await conference())?.participant_count ?? 0;
      await join(tone, 30);
      // One at a time, so the participants' order is the legs' order.
      await eventually(async () => (await conference())?.participant_count === before + 1, `${tone} Hz joined`, 15_000);
    }
    const conf = (await conference())!;
    assert.equal(conf.status, 'in-progress');
    let since = Date.now();
    await new Promise((r) => setTimeout(r, 2500));
    assertHearing(since, () => true);

    // Mute the 440 Hz caller: the two others stop hearing it; it still hears them.
    const [first] = await participants(conf.sid);
    const muted = await api(
      t.ctx.baseUrl,
      t.acct.key,
      'POST',
      `/api/conferences/${conf.sid}/participants/${first!.call_sid}`,
      {
        muted: true,
      },
    );
    assert.equal(muted.status, 200, JSON.stringify(muted.body));
    assert.equal(muted.body.muted, true);
    since = Date.now() + 200; // what was already on its way
    await new Promise((r) => setTimeout(r, 2500));
    assertHearing(since, (_listener, speaker) => speaker !== 0);

    // Kick the 880 Hz caller: it leaves the conference (its Dial ends, its document has nothing more: hangup).
    const third = (await participants(conf.sid))[2]!;
    const kicked = await api(
      t.ctx.baseUrl,
      t.acct.key,
      'POST',
      `/api/conferences/${conf.sid}/participants/${third.call_sid}/kick`,
    );
    assert.equal(kicked.status, 204);
    await eventually(async () => (await conference())?.participant_count === 2, 'the kicked caller gone', 10_000);

    // The two others are hung up: the conference ends and is gone from the list.
    for (const p of await participants(conf.sid)) {
      const r = await api(t.ctx.baseUrl, t.acct.key, 'POST', '/api/calls/hangup', { sid: p.call_sid });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    await eventually(async () => (await conference()) === undefined, 'the conference ended', 20_000);
    // An ended conference is live state no more: each route on it or its participants is 404 with its code.
    const gone = async (method: 'GET' | 'POST', path: string, body?: object) =>
      (await api(t.ctx.baseUrl, t.acct.key, method, `/api/conferences/${conf.sid}${path}`, body)).body?.code;
    assert.equal(await gone('GET', ''), 'CONFERENCE_NOT_FOUND');
    assert.equal(await gone('GET', '/participants'), 'CONFERENCE_NOT_FOUND');
    assert.equal(await gone('POST', `/participants/${third.call_sid}`, { muted: true }), 'PARTICIPANT_NOT_FOUND');
    assert.equal(await gone('POST', `/participants/${third.call_sid}/kick`), 'PARTICIPANT_NOT_FOUND');
    const codes = (await t.ctx.db('call_events').select('code')).map((e: { code: string }) => e.code);
    const count = (code: string) => codes.filter((c) => c === code).length;
    assert.equal(count('CONF.0100'), 1, 'conference.started once');
    assert.equal(count('CONF.0110'), 3, 'participant.joined for each caller');
    assert.equal(count('CONF.0300'), 1, 'conference.ended once');
    // The Dial's record: the whole mix, kept as a recording of the first caller's call once the conference ended.
    const recordings = await eventually(
      async () => {
        const r = await api(t.ctx.baseUrl, t.acct.key, 'GET', '/api/recordings');
        return r.body.length > 0 ? r.body : undefined;
      },
      'the conference recording',
      10_000,
    );
    assert.equal(recordings.length, 1, JSON.stringify(recordings));
    assert.ok(recordings[0].duration_seconds >= 4, JSON.stringify(recordings[0]));
    const row = await t.ctx.db('recordings').where({ id: recordings[0].uuid }).first();
    const mix = (await readWav(row.storage_path)).samples;
    // Each tone was in the mix for seconds (440 Hz until muted, 880 Hz until kicked): heard for at least one.
    for (const tone of TONES) {
      const seconds = toneSeconds(mix, tone, 1000);
      assert.ok(seconds >= 1, `${tone} Hz in the recorded mix for ${seconds} s`);
    }
  });
});
