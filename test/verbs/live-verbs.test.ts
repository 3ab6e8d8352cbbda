import assert from 'node:assert/strict';
import { parseVerbDocument, VerbDocumentError } from '../../verbs/index.js';
import { Enqueue } from '../../verbs/tasks/enqueue.js';
import type { QueueOutcome, QueueTicket, VerbContext } from '../../verbs/index.js';

describe('verbs: queues and media streams (parse-live.ts, enqueue.ts)', () => {
  it('parses Enqueue, Dial Queue, Start/Stop/Connect Stream with their defaults and parameters', () => {
    const doc = parseVerbDocument(
      `<Response>
        <Start><Stream name="s1" url="wss://agent.example/audio" track="both_tracks">
          <Parameter name="ticket" value="42"/><Parameter name="lang" value="sw"/></Stream></Start>
        <Enqueue waitUrl="https://x.example/wait" action="https://x.example/left" maxSize="5">support</Enqueue>
        <Stop><Stream name="s1"/></Stop>
        <Dial><Queue>support</Queue></Dial>
        <Connect action="https://x.example/after"><Stream url="ws://bot.example/"/></Connect>
      </Response>`,
    );
    const [start, enqueue, stop, dial, connect] = doc.verbs;
    assert.deepEqual(start, {
      verb: 'Start',
      line: 2,
      stream: {
        url: 'wss://agent.example/audio',
        name: 's1',
        track: 'both_tracks',
        parameters: { ticket: '42', lang: 'sw' },
      },
    });
    assert.deepEqual(enqueue, {
      verb: 'Enqueue',
      line: 4,
      name: 'support',
      waitUrl: 'https://x.example/wait',
      action: 'https://x.example/left',
      method: 'POST',
      maxSize: 5,
    });
    assert.deepEqual(stop, { verb: 'Stop', line: 5, name: 's1' });
    assert.equal(dial!.verb, 'Dial');
    assert.deepEqual(dial!.verb === 'Dial' && dial.target, { kind: 'queue', queue: 'support' });
    assert.deepEqual(connect, {
      verb: 'Connect',
      line: 7,
      stream: { url: 'ws://bot.example/', track: 'inbound_track', parameters: {} },
      action: 'https://x.example/after',
      method: 'POST',
    });
  });

  it('refuses a Stream URL that is not ws(s), an empty queue name, a Start without Stream, a bad track', () => {
    const bad: [string, RegExp][] = [
      ['<Response><Start><Stream url="https://x.example/"/></Start></Response>', /not an absolute ws:\/\/ or wss:\/\//],
      ['<Response><Connect><Stream/></Connect></Response>', /Stream url '' is not/],
      ['<Response><Enqueue></Enqueue></Response>', /Enqueue/],
      ['<Response><Start/></Response>', /Start/],
      ['<Response><Start><Stream url="wss://x/" track="all"/></Start></Response>', /track/],
      [
        '<Response><Start><Stream url="wss://x/"><Parameter name="a"/><Parameter name="a"/></Stream></Start></Response>',
        /Parameter 'a' is given twice/,
      ],
      [`<Response><Enqueue>${'q'.repeat(65)}</Enqueue></Response>`, /Enqueue/],
      ['<Response><Enqueue waitUrl="ftp://x/">q</Enqueue></Response>', /waitUrl/],
    ];
    for (const [xml, why] of bad) {
      assert.throws(
        () => parseVerbDocument(xml),
        (e: unknown) => e instanceof VerbDocumentError && why.test(e.message),
        xml,
      );
    }
  });

  it('Enqueue: the action gets QueueResult and QueueTime; a REST dequeue runs the URL given instead', async () => {
    const ticket = (outcome: QueueOutcome): QueueTicket => {
      const holdOver = new AbortController();
      holdOver.abort();
      return {
        position: () => 1,
        size: () => 1,
        waitedSeconds: () => 0,
        averageWaitSeconds: () => 0,
        holdOver: holdOver.signal,
        outcome: Promise.resolve(outcome),
        leave: () => undefined,
      };
    };
    const ctx = (outcome: QueueOutcome) => ({ joinQueue: async () => ticket(outcome) }) as unknown as VerbContext;
    const verb = {
      verb: 'Enqueue',
      line: 1,
      name: 'q',
      method: 'POST',
      maxSize: 10,
      action: 'https://x/left',
    } as const;
    assert.deepEqual(await new Enqueue(verb).exec(ctx({ result: 'bridged', queueTimeSeconds: 7 })), {
      next: 'fetch',
      via: 'action',
      url: 'https://x/left',
      extras: { QueueResult: 'bridged', QueueTime: 7 },
    });
    assert.deepEqual(
      await new Enqueue(verb).exec(ctx({ result: 'redirected', queueTimeSeconds: 3, redirectUrl: 'https://x/next' })),
      { next: 'fetch', via: 'redirect', url: 'https://x/next', extras: { QueueResult: 'redirected', QueueTime: 3 } },
    );
    const noAction = { ...verb, action: undefined };
    assert.deepEqual(await new Enqueue(noAction).exec(ctx({ result: 'queue-full', queueTimeSeconds: 0 })), {
      next: 'continue',
      didWork: true,
    });
  });

  it('Enqueue without waitUrl: hold audio again and again, the position spoken at first and when it moves up', async () => {
    const hold = new AbortController();
    const positions = [3, 3, 2, 2, 1];
    let round = 0;
    const log: string[] = [];
    let settle!: (o: QueueOutcome) => void;
    const ticket: QueueTicket = {
      position: () => positions[Math.min(round, positions.length - 1)]!,
      size: () => 3,
      waitedSeconds: () => 0,
      averageWaitSeconds: () => 0,
      holdOver: hold.signal,
      outcome: new Promise((r) => (settle = r)),
      leave: () => undefined,
    };
    const ctx = {
      joinQueue: async () => ticket,
      say: async (text: string) => void log.push(text),
      playHold: async () => {
        log.push('hold');
        round += 1;
        if (round === positions.length) {
          hold.abort();
          settle({ result: 'bridged', queueTimeSeconds: 9 });
        }
      },
    } as unknown as VerbContext;
    const verb = { verb: 'Enqueue', line: 1, name: 'q', method: 'POST', maxSize: 10 } as const;
    await new Enqueue(verb).exec(ctx);
    assert.deepEqual(log, [
      'You are number 3 in the queue. Please hold.',
      'hold',
      'hold',
      'You are number 2 in the queue. Please hold.',
      'hold',
      'hold',
      'You are number 1 in the queue. Please hold.',
      'hold',
    ]);
  });
});
