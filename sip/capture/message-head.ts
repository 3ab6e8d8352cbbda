/**
 * What capture reads of a message's bytes without parsing it: the start line, the Call-ID and whether the To header
 * has a tag, from the header section only (compact forms `i` and `t` too, RFC 3261 §7.3.3). A message too broken to
 * show them still goes to HEP, without a call.
 */
export interface MessageHead {
  startLine: string;
  callId: string | undefined;
  /** An out-of-dialog INVITE (no To tag): the first message of a call leg. */
  opensLeg: boolean;
}

/** Header sections beyond this are not searched (the transport's own limit is larger; such messages are rare). */
const MAX_HEAD = 8192;

export function readHead(data: Buffer): MessageHead {
  const text = data.toString('latin1', 0, Math.min(data.length, MAX_HEAD));
  const end = text.indexOf('\r\n\r\n');
  const head = end < 0 ? text : text.slice(0, end);
  const firstEnd = head.indexOf('\r\n');
  const startLine = firstEnd < 0 ? head : head.slice(0, firstEnd);
  const callId = /\r\n(?:call-id|i)[ \t]*:[ \t]*([^\r\n]*?)[ \t]*(?=\r\n|$)/i.exec(head)?.[1] || undefined;
  let opensLeg = false;
  if (startLine.startsWith('INVITE ')) {
    const to = /\r\n(?:to|t)[ \t]*:([^\r\n]*)/i.exec(head)?.[1] ?? '';
    opensLeg = !/;[ \t]*tag[ \t]*=/i.test(to);
  }
  return { startLine, callId, opensLeg };
}
