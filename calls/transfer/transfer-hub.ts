import type { ChildLegs } from '../child-leg.js';
import type { EndUserLocator } from '../flows/end-user.js';
import type { FlowDeps } from '../flows/flow-deps.js';
import type { EndUserIdentity } from '../../sip/index.js';
import type { Responder, SipRequest } from '../../sip/stack/index.js';
import { inviteWithReplaces } from './replaces-invite.js';
import { watchTransfers } from './transfer.js';
import type { TransferableBridge, TransferLeg } from './transfer-bridge.js';
import type { TransferContext } from './transfer-steps.js';

/** A live call the engine holds that may be a bridge a transfer can reach (BridgedCall, a Dial's bridge). */
export interface BridgeSource {
  bridges(): Iterable<TransferableBridge & { legs(): readonly TransferLeg[] }>;
}

/**
 * The engine's side of call transfer (RFC 3515 REFER, RFC 3891 Replaces): watches phones' legs of bridges for
 * REFER, opens the transferred party's new legs (CDR with `parent_call_id`, held so a billing cut of the leg ends
 * the call it is part of) and finds the consultation call an attended transfer names.
 */
export class CallTransfers {
  readonly #ctx: TransferContext | undefined;

  constructor(deps: FlowDeps & { locator?: EndUserLocator }, source: BridgeSource, childLegs: ChildLegs) {
    const locator = deps.locator;
    // Without a location service there are no phones to transfer to (nor from).
    this.#ctx = locator && {
      ...deps,
      locator,
      openLeg: (parent, call) => childLegs.open(parent, call, false),
      findBridge: (accountId, match) => {
        for (const bridge of source.bridges()) {
          // An emergency call is never moved nor taken over (its other leg is the PSAP's).
          if (bridge.life.row.account_id !== accountId || bridge.isEnding || bridge.life.row.emergency) continue;
          const leg = bridge.legs().find((l) => match(l.dialog));
          if (leg) return { bridge, leg };
        }
        return undefined;
      },
    };
  }

  /** Phones on these legs may transfer the call from now on. */
  watch(bridge: TransferableBridge, legs: readonly TransferLeg[]): void {
    const ctx = this.#ctx;
    if (!ctx) return;
    for (const leg of legs) watchTransfers(ctx, bridge, leg);
  }

  /** An INVITE with Replaces from a phone (replaces-invite.ts); 501 when there are no phones (no location service). */
  async replace(req: SipRequest, srv: Responder, who: EndUserIdentity): Promise<void> {
    if (!this.#ctx) return void srv.send(501);
    await inviteWithReplaces(this.#ctx, req, srv, who);
  }
}
