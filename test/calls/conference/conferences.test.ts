import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Conferences, joinConference, type ConferenceCall } from '../../../calls/conference/index.js';
import { ManualClock } from '../../../kit/index.js';
import { TickScheduler, decodeG711, encodeG711, readWav, type RecordingResult } from '../../../media/index.js';
import type { ConferenceNoun } from '../../../verbs/index.js';
import { quietLogger } from '../../support/logger.js';
import { sine, toneAmplitude } from '../../support/tones.js';

const NOUN: ConferenceNoun = {
  name: 'room',
  startConferenceOnEnter: true,
  endConferenceOnExit: false,
  muted: false,
  beepOnEnter: false,
  beepOnExit: false,
  maxParticipants: 250,
  record: 'do-not-record',
};

interface FakeCall extends ConferenceCall {
  events: Array<[string, Record<string, unknown>]>;
  sent: Buffer[];
  hear: (pcmu: Buffer) => void;
  recordings: RecordingResult[];
  hangup: AbortController;
}

describe('Conferences (calls/conference/): who waits, who is heard, when it ends', () => {
  let clock: ManualClock;
  let conferences: Conferences;
  let dir: string;
  const played: string[] = [];
  let calls = 0;

  beforeEach(() => {
    clock = new ManualClock(1_000_000);
    dir = mkdtempSync(path.join(os.tmpdir(), 'simu-conf-unit-'));
    played.length = 0;
    const ports = new Map<string, FakeCall>();
    conferences = new Conferences({
      log: quietLogger,
      clock: { now: () => clock.now() },
      recordingsDir: dir,
      scheduler: new TickScheduler({ timers: clock, clock: { now: () => clock.now() } }),
      port: (callId) => {
        const call = ports.get(callId)!;
        return {
          onReceived: (fn) => ((call.hear = fn), () => (call.hear = () => undefined)),
          send: (pcmu) => (call.sent.push(Buffer.from(pcmu)), true),
        };
      },
      playUrl: (callId, url, signal) => {
        played.push(`${callId} ${url}`);
        return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      },
    });
    fake = (account = 'acct-1') => {
      calls += 1;
      const call: FakeCall = {
        id: `call-${calls}`,
        sid: `CA${calls}`,
        accountId: account,
        events: [],
        sent: [],
        hear: () => undefined,
        recordings: [],
        hangup: new AbortController(),
        emit: async (code, data) => void call.events.push([code, data]),
        keepRecording: async (r) => void call.recordings.push(r),
      };
      ports.set(call.id, call);
      return call;
    };
  });

  afterEach(() => {
    conferences.scheduler.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  let fake: (account?: string) => FakeCall;
  const settle = () => new Promise((r) => setImmediate(r));
  const codes = (c: FakeCall) => c.events.map(([code]) => code);

  it('waits (hearing waitUrl, out of the mix) until a participant with startConferenceOnEnter joins', async () => {
    const a = fake();
    const b = fake();
    const noun = { ...NOUN, startConferenceOnEnter: false, waitUrl: 'https://x.example/hold.wav' };
    const stayA = joinConference(conferences, a, noun, { signal: a.hangup.signal });
    await settle();
    const [conf] = conferences.list('acct-1');
    assert.equal(conf?.status, 'waiting');
    assert.deepEqual(played, [`${a.id} https://x.example/hold.wav`]);
    clock.advance(100);
    assert.equal(a.sent.length, 0, 'a waiting participant is sent no mix');
    const stayB = joinConference(conferences, b, NOUN, { signal: b.hangup.signal });
    await settle();
    assert.equal(conferences.find('acct-1', conf!.sid)?.status, 'in-progress');
    assert.deepEqual(codes(b), ['CONF.0110', 'CONF.0100']);
    assert.equal(conferences.participants('acct-1', conf!.sid)?.[0]?.waiting, false);
    clock.advance(100);
    assert.ok(a.sent.length >= 4 && b.sent.length >= 4, 'both are mixed once started');
    a.hangup.abort();
    b.hangup.abort();
    assert.equal((await stayA).status, 'completed');
    await stayB;
    assert.equal(conferences.liveCount, 0);
    assert.equal(conferences.scheduler.running, false, 'no conference, no timer');
  });

  it('endConferenceOnExit: when that participant leaves, everyone leaves and CONF.0300 is said once', async () => {
    const host = fake();
    const guest = fake();
    const stayHost = joinConference(
      conferences,
      host,
      { ...NOUN, endConferenceOnExit: true },
      { signal: host.hangup.signal },
    );
    const stayGuest = joinConference(conferences, guest, NOUN, { signal: guest.hangup.signal });
    await settle();
    clock.advance(5000);
    host.hangup.abort();
    const [h, g] = await Promise.all([stayHost, stayGuest]);
    assert.deepEqual([h.status, g.status], ['completed', 'completed']);
    assert.equal(h.durationSeconds, 5);
    assert.deepEqual(codes(host), ['CONF.0110', 'CONF.0100', 'CONF.0120', 'CONF.0300']);
    assert.deepEqual(codes(guest), ['CONF.0110', 'CONF.0120']);
    assert.equal(guest.events[1]![1].reason, 'conference-ended');
    assert.deepEqual(conferences.list('acct-1'), []);
  });

  it("the Dial's timeLimit: the participant leaves when it is up (time-limit), the others stay", async () => {
    const [a, b] = [fake(), fake()];
    const stayA = joinConference(conferences, a, NOUN, { signal: a.hangup.signal, timeLimit: 0.05 });
    void joinConference(conferences, b, NOUN, { signal: b.hangup.signal });
    assert.equal((await stayA).status, 'completed');
    assert.equal(a.events.at(-1)![1].reason, 'time-limit');
    assert.equal(conferences.list('acct-1')[0]?.participantCount, 1);
    b.hangup.abort();
  });

  it('maxParticipants: a caller beyond it does not join (failed, CONFERENCE_FULL)', async () => {
    const noun = { ...NOUN, maxParticipants: 2 };
    const [a, b, c] = [fake(), fake(), fake()];
    void joinConference(conferences, a, noun, { signal: a.hangup.signal });
    void joinConference(conferences, b, noun, { signal: b.hangup.signal });
    const third = await joinConference(conferences, c, noun, { signal: c.hangup.signal });
    assert.equal(third.status, 'failed');
    assert.equal(c.events[0]![0], 'DIAL.0300');
    assert.equal(c.events[0]![1].reason, 'CONFERENCE_FULL');
    a.hangup.abort();
    b.hangup.abort();
  });

  it('REST control: mute is heard by the others, hold plays the wait audio, kick ends the stay; another account sees nothing', async () => {
    const [a, b] = [fake(), fake()];
    const noun = { ...NOUN, waitUrl: 'https://x.example/hold.wav' };
    void joinConference(conferences, a, noun, { signal: a.hangup.signal });
    const stayB = joinConference(conferences, b, noun, { signal: b.hangup.signal });
    await settle();
    const sid = conferences.list('acct-1')[0]!.sid;
    assert.equal(conferences.find('acct-2', sid), undefined);
    assert.equal(conferences.update('acct-2', sid, a.sid, { muted: true }), undefined);
    assert.equal(conferences.kick('acct-2', sid, b.sid), false);

    // A continuous tone, 20 ms a packet.
    const tone = encodeG711(sine(440, 10 * 0.02), 0);
    const heardByB = (): number => {
      b.sent.length = 0;
      for (let i = 0; i < 10; i += 1) {
        a.hear(tone.subarray(i * 160, (i + 1) * 160));
        clock.advance(20);
      }
      const pcm = decodeG711(Buffer.concat(b.sent), 0);
      return toneAmplitude(pcm, 440);
    };
    assert.ok(heardByB() > 3000, 'a is heard');
    assert.equal(conferences.update('acct-1', sid, a.sid, { muted: true })?.muted, true);
    assert.ok(heardByB() < 200, 'a muted is not heard');
    const held = conferences.update('acct-1', sid, b.sid, { hold: true });
    assert.equal(held?.hold, true);
    assert.ok(played.includes(`${b.id} https://x.example/hold.wav`));
    assert.equal(conferences.kick('acct-1', sid, b.sid), true);
    assert.equal((await stayB).status, 'completed');
    assert.equal(b.events.at(-1)![1].reason, 'kicked');
    assert.equal(conferences.participants('acct-1', sid)?.length, 1);
    a.hangup.abort();
  });

  it('record-from-start: the whole mix is written as a WAV and kept as a recording of that call', async () => {
    const [a, b] = [fake(), fake()];
    void joinConference(conferences, a, { ...NOUN, record: 'record-from-start' }, { signal: a.hangup.signal });
    const stayB = joinConference(conferences, b, NOUN, { signal: b.hangup.signal });
    await settle();
    const tone = encodeG711(sine(660, 150 * 0.02), 0);
    for (let i = 0; i < 150; i += 1) {
      b.hear(tone.subarray(i * 160, (i + 1) * 160));
      clock.advance(20);
    }
    a.hangup.abort();
    b.hangup.abort();
    await stayB;
    for (let i = 0; i < 20 && a.recordings.length === 0; i += 1) await new Promise((r) => setTimeout(r, 20));
    const [rec] = a.recordings;
    assert.ok(rec, 'kept as a recording of the call that asked');
    assert.ok(Math.abs(rec.durationSec - 3) < 0.1, `duration ${rec.durationSec}`);
    const wav = await readWav(rec.path);
    assert.equal(wav.sampleRate, 8000);
    assert.ok(toneAmplitude(wav.samples.subarray(8000), 660) > 3000, 'the mix holds the tone');
    assert.equal(readFileSync(rec.path).length, rec.sizeBytes);
  });
});
