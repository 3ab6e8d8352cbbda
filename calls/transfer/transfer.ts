import {
  parseNameAddr,
  parseReferTo,
  ReferSubscription,
  type Dialog,
  type Responder,
  type SipRequest,
} from '../../sip/stack/index.js';
import { attendedTransfer } from './attended.js';
import { blindTransfer } from './blind.js';
import type { TransferableBridge, TransferLeg } from './transfer-bridge.js';
import type { Transfer, TransferContext } from './transfer-steps.js';

/** Bridges with a transfer under way: a second REFER on either leg waits for the first (491). */
const busy = new WeakSet<TransferableBridge>();

/**
 * A phone's leg of a bridge accepts REFER (RFC 3515) from now on: blind (Refer-To names the target) or attended
 * (Refer-To carries Replaces naming the transferor's consultation call, RFC 3891). Only phones' legs are watched;
 * a carrier's REFER is still answered 501 by the stack.
 */
export function watchTransfers(d: TransferContext, bridge: TransferableBridge, leg: TransferLeg): void {
  leg.dialog.on('refer', (req, srv) => {
    void onRefer(d, bridge, leg.dialog, req, srv).catch((e: unknown) => {
      d.log.warn({ err: e, call: bridge.life.row.sid }, 'transfer failed');
      if (!srv.finalResponse) srv.send(500);
    });
  });
}

async function onRefer(
  d: TransferContext,
  bridge: TransferableBridge,
  dialog: Dialog,
  req: SipRequest,
  srv: Responder,
): Promise<void> {
  const referTo = parseReferTo(req.headers.get('refer-to'));
  if (!referTo) return void srv.send(400, 'Bad Refer-To');
  const transferor = bridge.legOf(dialog);
  const transferee = bridge.otherLeg(dialog);
  // §2.4.2 of RFC 3515 lets a REFER be refused outright; a call already ending has nobody left to transfer.
  if (!transferor || !transferee || bridge.isEnding) return void srv.send(603, 'Decline');
  if (busy.has(bridge)) return void srv.send(491, 'Request Pending');
  busy.add(bridge);
  try {
    srv.send(202, 'Accepted');
    const sub = new ReferSubscription(dialog, req.cseq.seq);
    void sub.progress(100, 'Trying');
    const domain = hostOf(req.headers.get('from'));
    const t: Transfer = { d, bridge, transferor, transferee, sub, domain, watch: (l) => watchTransfers(d, bridge, l) };
    if (referTo.replaces) await attendedTransfer(t, referTo.replaces);
    else await blindTransfer(t, referTo.uri, ownDomains(d, req));
  } finally {
    busy.delete(bridge);
  }
}

/** Hosts a Refer-To may name: the account's domain as the transferor wrote it (its From and To), the switch. */
function ownDomains(d: TransferContext, req: SipRequest): string[] {
  const hosts = [d.config.publicHost, d.sip.ua.address('UDP')?.host ?? ''];
  for (const h of ['from', 'to']) hosts.push(hostOf(req.headers.get(h)) ?? '');
  return hosts.filter((h) => h !== '');
}

function hostOf(nameAddr: string | undefined): string | undefined {
  const uri = parseNameAddr(nameAddr ?? '')?.uri as { host?: string } | undefined;
  return uri?.host;
}
