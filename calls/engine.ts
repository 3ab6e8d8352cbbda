import type { Config } from '../config/index.js';
import { roomLogger } from '../config/index.js';
import type { CallEngine } from '../api/index.js';
import type { EventPublisher } from '../events/index.js';
import { ReasonCodes } from '../events/index.js';
import type { MediaEngines } from '../media/index.js';
import { findCallAnyAccount, type CallRow, type Db } from '../store/index.js';
import { CallLifecycle } from './lifecycle.js';

export interface CallEngineDeps {
  db: Db;
  config: Config;
  publisher: EventPublisher;
  engines: MediaEngines;
}

/**
 * The switch's call engine: owns every live call of this process. The API hands it admitted calls; the SIP
 * applications hand it inbound and end-user calls.
 */
export class SwitchCallEngine implements CallEngine {
  readonly #deps: CallEngineDeps;
  readonly #live = new Map<string, CallLifecycle>();
  readonly #log = roomLogger('calls');

  constructor(deps: CallEngineDeps) {
    this.#deps = deps;
  }

  async originate(call: CallRow, _opts: { timeoutSeconds: number }): Promise<void> {
    const life = new CallLifecycle({ db: this.#deps.db, events: this.#deps.publisher, log: this.#log }, call);
    this.#live.set(call.id, life);
    void life.ended.then(() => this.#live.delete(call.id));
    await life.initiated();
    // Dialling through a trunk is wired in with the SIP applications (calls/flows/originate.ts).
    await life.end(ReasonCodes.carrierFailure);
  }

  async hangup(call: CallRow): Promise<CallRow> {
    const live = this.#live.get(call.id);
    if (live) return live.end(ReasonCodes.normalHangup);
    // The store shows the call live but this switch does not hold it: close it as reconciled (spec: END.0504).
    const life = new CallLifecycle({ db: this.#deps.db, events: this.#deps.publisher, log: this.#log }, call);
    await life.end(ReasonCodes.reconciled);
    return (await findCallAnyAccount(this.#deps.db, call.id)) ?? call;
  }

  isLive(callId: string): boolean {
    return this.#live.has(callId);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#live.values()].map((l) => l.end(ReasonCodes.normalHangup)));
  }
}
