import { audioEndpoint } from '../../media/index.js';
import type { Logger } from '../../config/index.js';
import type { MediaService } from '../../media/index.js';
import type { TransferLeg } from './transfer-bridge.js';

type Media = Pick<MediaService, 'offer' | 'answer'>;

/** A media tag for a leg a transfer adds to a call's session, never one in use (`T1`, `T2` ...). */
let counter = 0;
export function newLegTag(): string {
  counter = (counter + 1) % 1_000_000;
  return `T${counter}`;
}

/**
 * The transferee's media is offered towards a new leg `toTag` inside the call's rtpengine session, from the SDP the
 * transferee last sent: the same from-tag and SDP keep its ports, so it needs no re-INVITE when the new leg answers.
 */
export function offerTowards(
  media: Media,
  callId: string,
  transferee: TransferLeg,
  to: { tag: string; side: TransferLeg['side'] },
) {
  return media.offer(callId, transferee.tag, transferee.dialog.remoteSdp ?? '', { toSide: to.side, toTag: to.tag });
}

/**
 * The new leg answered with `sdp`: the session pairs the transferee with it. If the SDP the transferee should now
 * see names another address or port than the one it has (the engine moved it), the transferee is re-INVITEd.
 */
export async function completeTowards(
  media: Media,
  callId: string,
  transferee: TransferLeg,
  toTag: string,
  sdp: string,
  log: Logger,
): Promise<void> {
  const answer = await media.answer(callId, transferee.tag, toTag, sdp, { fromSide: transferee.side });
  const before = audioEndpoint(transferee.dialog.localSdp ?? '');
  const after = audioEndpoint(answer);
  if (before && after && before.address === after.address && before.port === after.port) return;
  await transferee.dialog.modify(answer).catch((e: unknown) => log.warn({ err: e }, 'transferee not re-INVITEd'));
}

/** A transfer that did not happen: the transferee's media goes back to the transferor, as before the REFER. */
export async function restoreTowards(media: Media, callId: string, transferee: TransferLeg, transferor: TransferLeg) {
  await offerTowards(media, callId, transferee, transferor);
  await media.answer(callId, transferee.tag, transferor.tag, transferor.dialog.remoteSdp ?? '', {
    fromSide: transferee.side,
  });
}
