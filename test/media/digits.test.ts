import assert from 'node:assert/strict';
import type { MediaError, MediaService } from '../../media/index.js';
import { startMediaService, waitFor } from './helpers.js';
import { RtpPeer, tone, type Received } from './rtp-peer.js';

/** RFC 4733 events a peer received, one entry per event (start packet), in order: [digit, arrival ms]. */
function eventsOf(received: Received[], pt = 101): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  let lastTs: number | undefined;
  for (const p of received) {
    if (p.payloadType !== pt || p.timestamp === lastTs) continue;
    lastTs = p.timestamp;
    out.push(['0123456789*#ABCD'[p.payload[0] ?? 0] ?? '?', p.at]);
  }
  return out;
}

describe('media: digits sent into a call (ng play DTMF) reach the leg as RFC 4733 events', function () {
  this.timeout(60_000);
  let svc: Awaited<ReturnType<typeof startMediaService>>;
  let media: MediaService;
  const peers: RtpPeer[] = [];
  let n = 0;
  const callId = (): string => `digits-${process.pid}-${(n += 1)}`;
  const caller = async (): Promise<RtpPeer> => {
    const p = await RtpPeer.open();
    peers.push(p);
    return p;
  };

  before(async () => {
    svc = await startMediaService('digits');
    media = svc.media;
  });

  after(async () => {
    for (const p of peers) p.close();
    await svc?.stop();
  });

  it('an IVR leg receives each key as a telephone-event, in order, with the w pause between them', async () => {
    const id = callId();
    const a = await caller();
    a.useSdp(await media.answerIvr(id, 'A', a.sdp(['PCMU', 'telephone-event'])));
    a.sendFrame(new Int16Array(160));
    await media.sendDigits(id, 'A', '1#w9D');
    await waitFor(() => eventsOf(a.received).length >= 4, 2000, 'four events');
    const events = eventsOf(a.received);
    assert.deepEqual(
      events.map(([d]) => d),
      ['1', '#', '9', 'D'],
    );
    const gap = events[2]![1] - events[1]![1];
    assert.ok(gap >= 700, `# to 9 took ${gap} ms (tone, gap and a 500 ms pause)`);
    // Each event ends (E bit) with a duration near 200 ms.
    const ends = a.received.filter((p) => p.payloadType === 101 && (p.payload[1]! & 0x80) !== 0);
    const duration = ends[0]!.payload.readUInt16BE(2) / 8;
    assert.ok(duration >= 150 && duration <= 300, `event lasted ${duration} ms`);
    await media.deleteSession(id);
  });

  it('after digits were sent, the IVR still hears the caller and the caller still hears prompts', async () => {
    const id = callId();
    const a = await caller();
    a.useSdp(await media.answerIvr(id, 'A', a.sdp(['PCMU', 'telephone-event'])));
    a.sendFrame(new Int16Array(160));
    await media.sendDigits(id, 'A', '5');
    const before = media.ivrPacketsReceived(id, 'A');
    await a.sendAudio(tone(440, 0.4));
    await waitFor(() => media.ivrPacketsReceived(id, 'A') >= before + 15, 2000, 'caller audio at the IVR');
    a.received.length = 0;
    const r = await media.playBeep(id, 'A');
    assert.equal(r.completed, true);
    await waitFor(() => a.received.filter((p) => p.payloadType === 0).length >= 15, 2000, 'beep at the caller');
    await media.deleteSession(id);
  });

  it('refuses keys outside 0-9 * # A-D w and too many keys, before anything is sent', async () => {
    const id = callId();
    const a = await caller();
    a.useSdp(await media.answerIvr(id, 'A', a.sdp(['PCMU', 'telephone-event'])));
    for (const bad of ['', '12x', '1 2', 'W', '1'.repeat(33)]) {
      await assert.rejects(media.sendDigits(id, 'A', bad), (e: MediaError) => e.code === 'MEDIA_BAD_DIGITS', bad);
    }
    await media.deleteSession(id);
  });

  it('a leg bridged to another (no IVR end) is refused with MEDIA_LEG_BRIDGED', async () => {
    const id = callId();
    const a = await caller();
    const b = await caller();
    b.useSdp(await media.offer(id, 'A', a.sdp(['PCMU', 'telephone-event'])));
    a.useSdp(await media.answer(id, 'A', 'B', b.sdp(['PCMU', 'telephone-event'])));
    await assert.rejects(media.sendDigits(id, 'A', '1'), (e: MediaError) => e.code === 'MEDIA_LEG_BRIDGED');
    await media.deleteSession(id);
  });
});
