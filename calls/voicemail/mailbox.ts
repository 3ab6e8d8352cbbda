import { systemClock } from '../../kit/index.js';
import type { EndUserIdentity } from '../../sip/index.js';
import type { Responder, SipRequest } from '../../sip/stack/index.js';
import { deleteMessage, listMailbox, markMessageHeard, type CallRow, type RecordingRow } from '../../store/index.js';
import { CALLER_LEG } from '../call-media.js';
import { runGather } from '../gather-run.js';
import { dialsShortCode, runShortCodeCall, type ShortCodeCallDeps } from '../short-code-call.js';
import type { AnsweredCaller } from './ivr-leg.js';

/** The short code a phone dials to listen to its own mailbox. */
export const MAILBOX_CODE = '*97';

/** Keys while a message plays or after it (barge-in): delete it, or keep it and go on. */
export const MAILBOX_KEYS = { delete: '7', keep: '9' };

/** Seconds to wait for a key after each message's menu. */
const KEY_WAIT_SECONDS = 5;

/** True when a phone's Request-URI user part is the mailbox short code (`*97`, or `%2A97` as some phones send it). */
export const isMailboxCode = (user: string | undefined): boolean => dialsShortCode(user, MAILBOX_CODE, 8);

export type MailboxDeps = ShortCodeCallDeps;

/**
 * `*97` from a phone: the switch answers, says how many new and saved messages the end-user
 * has, plays each (new ones first) and takes a key during or after it: 7 deletes it, 9 (or nothing) keeps it and
 * goes on. A played message is no longer new; every change reaches the end-user's phones as a message-summary
 * NOTIFY. The call is an internal call of the end-user (its CDR's `to` is `*97`), admitted as any call of the account.
 */
export async function runMailbox(
  d: MailboxDeps,
  req: SipRequest,
  srv: Responder,
  who: EndUserIdentity,
  release: () => void,
): Promise<void> {
  const sc = { code: MAILBOX_CODE, name: 'mailbox', admitted: true, unbilled: false };
  await runShortCodeCall(d, req, srv, who, release, sc, (row, caller) => listen(d, row, who, caller));
}

async function listen(d: MailboxDeps, row: CallRow, who: EndUserIdentity, caller: AnsweredCaller): Promise<void> {
  const say = (text: string, signal = caller.gone) => d.media.say(row.id, CALLER_LEG, text, { signal });
  const messages = await listMailbox(d.db, who.accountId, who.endUserId);
  const fresh = messages.filter((m) => m.voicemail_status === 'new').length;
  await say(
    `You have ${fresh} new ${plural(fresh)} and ${messages.length - fresh} saved ${plural(messages.length - fresh)}.`,
  );
  let changed = false;
  for (const [i, message] of messages.entries()) {
    if (caller.gone.aborted) break;
    const key = await play(d, row, caller, message, i + 1);
    // What the phone asked is done even when it hung up right after (a key, then BYE).
    if (message.voicemail_status === 'new') {
      await markMessageHeard(d.db, who.accountId, message.id);
      changed = true;
    }
    if (key === MAILBOX_KEYS.delete) {
      await deleteMessage(d.db, who.accountId, message.id);
      changed = true;
      if (!caller.gone.aborted) await say('Message deleted.');
    }
  }
  if (changed) void d.sip.mwi.changed(who.accountId, who.endUserId).catch(() => undefined); // not held by NOTIFYs
  if (!caller.gone.aborted) await say('No more messages. Goodbye.');
}

/** One message and its menu, through the Gather machinery: a key barges in on both; '' when none came. */
async function play(
  d: MailboxDeps,
  row: CallRow,
  caller: AnsweredCaller,
  message: RecordingRow,
  n: number,
): Promise<string> {
  const result = await runGather(
    { clock: systemClock, listen: (fn) => caller.digits.listen(fn), callId: row.id },
    {
      dtmf: true,
      speech: false,
      numDigits: 1,
      finishOnKey: '',
      timeoutSeconds: KEY_WAIT_SECONDS,
      hints: [],
      signal: caller.gone,
      prompts: async (bargeIn) => {
        const signal = AbortSignal.any([bargeIn, caller.gone]);
        await d.media.say(row.id, CALLER_LEG, `Message ${n}.`, { signal });
        if (signal.aborted || !message.storage_path) return;
        await d.media.playFile(row.id, CALLER_LEG, message.storage_path, { signal });
        if (signal.aborted) return;
        await d.media.say(
          row.id,
          CALLER_LEG,
          `Press ${MAILBOX_KEYS.delete} to delete it, or ${MAILBOX_KEYS.keep} to keep it.`,
          { signal },
        );
      },
    },
  );
  return result.digits;
}

function plural(n: number): string {
  return n === 1 ? 'message' : 'messages';
}
