import type { NgResponse, SessionEngine, SessionNgClient } from '../../media/index.js';
import { plainAudioSdp } from '../../media/index.js';

type Command = keyof SessionNgClient;

/**
 * A fake of the ng commands a MediaSession sends, for unit tests of a session's state (close cascade, pending
 * requests, timers). Every command is logged; `hold(command)` makes the next ones of that kind wait until
 * `release(command)`, as an engine slow to answer would. Media itself needs the real rtpengine (the other tests here).
 */
export class FakeNgClient implements SessionNgClient {
  readonly sent: Array<{ command: Command; params: Record<string, unknown> }> = [];
  /** What `play media` answers as the file's length. */
  playDurationMs = 2000;
  /** rtpengine's local port per leg tag, as `query` reports it. */
  readonly ports = new Map<string, number>([
    ['A', 30000],
    ['B', 30002],
  ]);
  readonly #held = new Map<Command, Array<() => void>>();
  readonly #holding = new Set<Command>();

  hold(command: Command): void {
    this.#holding.add(command);
  }

  release(command: Command): void {
    this.#holding.delete(command);
    for (const go of this.#held.get(command)?.splice(0) ?? []) go();
  }

  /** Commands sent, in order, by name. */
  commands(): Command[] {
    return this.sent.map((s) => s.command);
  }

  async #answer(command: Command, params: Record<string, unknown>, r: NgResponse): Promise<NgResponse> {
    this.sent.push({ command, params });
    if (this.#holding.has(command)) {
      await new Promise<void>((resolve) => {
        const list = this.#held.get(command) ?? [];
        list.push(resolve);
        this.#held.set(command, list);
      });
    }
    return r;
  }

  offer(params: Parameters<SessionNgClient['offer']>[0]) {
    const sdp = plainAudioSdp({ address: '127.0.0.1', port: 30010, codecs: ['PCMU', 'telephone-event'] });
    return this.#answer('offer', params, { result: 'ok', sdp }) as ReturnType<SessionNgClient['offer']>;
  }

  answer(params: Parameters<SessionNgClient['answer']>[0]) {
    const sdp = plainAudioSdp({ address: '127.0.0.1', port: 30012, codecs: ['PCMU', 'telephone-event'] });
    return this.#answer('answer', params, { result: 'ok', sdp }) as ReturnType<SessionNgClient['answer']>;
  }

  delete(params: Parameters<SessionNgClient['delete']>[0]) {
    return this.#answer('delete', params, { result: 'ok' });
  }

  query(params: Parameters<SessionNgClient['query']>[0]) {
    const tags = Object.fromEntries(
      [...this.ports].map(([tag, port]) => [tag, { medias: [{ streams: [{ 'local port': port }] }] }]),
    );
    return this.#answer('query', params, { result: 'ok', tags });
  }

  playMedia(params: Parameters<SessionNgClient['playMedia']>[0]) {
    return this.#answer('playMedia', params, { result: 'ok', duration: this.playDurationMs });
  }

  stopMedia(params: Parameters<SessionNgClient['stopMedia']>[0]) {
    return this.#answer('stopMedia', params, { result: 'ok' });
  }

  startRecording(params: Parameters<SessionNgClient['startRecording']>[0]) {
    return this.#answer('startRecording', params, { result: 'ok' });
  }

  stopRecording(params: Parameters<SessionNgClient['stopRecording']>[0]) {
    return this.#answer('stopRecording', params, { result: 'ok' });
  }

  subscribeRequest(params: Parameters<SessionNgClient['subscribeRequest']>[0]) {
    const sdp = plainAudioSdp({ address: '127.0.0.1', port: 30014, codecs: ['PCMU'], direction: 'sendonly' });
    return this.#answer('subscribeRequest', params, { result: 'ok', sdp, 'to-tag': 'sub-1' }) as ReturnType<
      SessionNgClient['subscribeRequest']
    >;
  }

  subscribeAnswer(params: Parameters<SessionNgClient['subscribeAnswer']>[0]) {
    return this.#answer('subscribeAnswer', params, { result: 'ok' });
  }

  unsubscribe(params: Parameters<SessionNgClient['unsubscribe']>[0]) {
    return this.#answer('unsubscribe', params, { result: 'ok' });
  }

  playDtmf(params: Parameters<SessionNgClient['playDtmf']>[0]) {
    return this.#answer('playDtmf', params, { result: 'ok' });
  }
}

export function fakeEngine(address = 'fake-engine'): SessionEngine & { client: FakeNgClient } {
  return { address, client: new FakeNgClient() };
}
