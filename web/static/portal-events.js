// The portal's live event view: each stream frame as a line a person reads (an icon, the time, the
// call, what happened in words, the reason in words), filterable by call and by code, the raw JSON one click away.
// Text only: nothing from a frame is ever parsed as HTML.

const ICONS = [
  [/^CALL\.0100$/, '☎', 'info'],
  [/^CALL\.018/, '♪', 'info'],
  [/^CALL\.0200$/, '✔', 'ok'],
  [/^CALL\.0300$/, '■', 'ok'],
  [/^CALL\.0400$/, '✖', 'bad'],
  [/^DIAL\.0403$/, '⊘', 'bad'],
  [/^DIAL\./, '↪', 'info'],
  [/^REC\./, '●', 'info'],
  [/^TTS\./, '✎', 'info'],
  [/^WH\.0200$/, '✉', 'ok'],
  [/^WH\./, '⚠', 'bad'],
  [/^BILL\.03/, '¤', 'info'],
  [/^(BILL|LIMIT|END|PLATFORM)\./, '⊘', 'bad'],
  [/^AUTH\.0200$/, '✱', 'ok'],
  [/^AUTH\./, '✱', 'bad'],
];

const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

export function iconFor(code) {
  const hit = ICONS.find(([re]) => re.test(code ?? ''));
  return hit ? { glyph: hit[1], tone: hit[2] } : { glyph: '•', tone: 'info' };
}

const CHARGE_KINDS = { call: 'talk time', tts: 'speech (Say)' };
const plural = (n, one) => `${n} ${one}${n === 1 ? '' : 's'}`;

/**
 * The tone of a reason code by its class: x.02xx ended normally, x.05xx and SYS are the platform's or the
 * network's failures, anything else (busy, no answer, refused, a limit) an outcome worth noticing but no fault.
 */
export function reasonTone(code) {
  if (/\.02\d\d$/.test(code ?? '')) return 'ok';
  if (/\.05\d\d$/.test(code ?? '') || /^SYS\./.test(code ?? '')) return 'bad';
  return 'warn';
}

/**
 * What happened, as a sentence about this call: who called whom and what became of it, from the frame's data and
 * the call's numbers (`call`: from_number, to_number, direction; absent until known, then the sentence says "this
 * call"). The reason code, if the event carries one, comes apart with its label and tone.
 */
export function describe(frame, codes, call) {
  const d = frame.data && typeof frame.data === 'object' ? frame.data : {};
  const from = call?.from_number || 'an unknown caller';
  const to = call?.to_number || 'an unknown number';
  const leg = call ? `the call from ${from} to ${to}` : 'this call';
  const label = codes?.events?.[frame.code]?.label ?? frame.event ?? frame.code ?? 'Event.';
  const what = sentence(frame.code, d, { call, from, to, leg, label });
  const reasonCode = d.reason_code ?? d.reasonCode;
  const reason = reasonCode ? `${codes?.reasons?.[reasonCode] ?? reasonCode} (${reasonCode})` : '';
  return { what, reason, reasonTone: reasonCode ? reasonTone(reasonCode) : '' };
}

function sentence(code, d, { call, from, to, leg, label }) {
  const Leg = leg[0].toUpperCase() + leg.slice(1);
  switch (code) {
    case 'CALL.0100':
      if (!call) return 'A call started.';
      return call.direction === 'outbound' ? `Calling ${to} from ${from}.` : `${from} is calling ${to}.`;
    case 'CALL.0180':
      return call ? `${to} is ringing for ${from}.` : 'This call is ringing.';
    case 'CALL.0183':
      return `Early media on ${leg}, before an answer.`;
    case 'CALL.0200':
      return call
        ? `${to} answered the call from ${from}; billing started.`
        : 'This call was answered; billing started.';
    case 'CALL.0210':
      return `${Leg} was redirected${d.url ? ` to ${d.url}` : ''}.`;
    case 'CALL.0300': {
      const parts = [
        d.duration != null && `after ${plural(d.duration, 'second')}`,
        d.cost != null && `cost ${d.cost} KES`,
      ];
      return `${Leg} ended${parts[0] ? ` ${parts[0]}` : ''}${parts[1] ? `; ${parts[1]}` : ''}.`;
    }
    case 'CALL.0400':
      return `${Leg} did not connect.`;
    case 'DIAL.0200':
      return `A Dial leg of ${leg} was answered and bridged.`;
    case 'DIAL.0300':
      return `A Dial leg of ${leg} ended: ${d.DialCallStatus ?? 'done'}${d.DialCallDuration != null ? ` after ${plural(d.DialCallDuration, 'second')}` : ''}${d.reason ? ` (${d.reason})` : ''}.`;
    case 'DIAL.0403':
      return `${Leg} may not dial ${d.to ?? 'that destination'}${d.reason ? `: ${d.reason}` : ''}.`;
    case 'BILL.0300':
      return `Charged ${d.amount ?? '?'} KES for ${CHARGE_KINDS[d.kind] ?? d.kind ?? 'usage'} on ${leg}${d.balance != null ? `; balance ${d.balance} KES` : ''}.`;
    case 'REC.0100':
      return `Recording started on ${leg}.`;
    case 'REC.0300':
      return `A recording${d.duration != null ? ` of ${plural(d.duration, 'second')}` : ''} of ${leg} was saved.`;
    case 'TTS.0200':
      return `Speech${d.seconds != null ? ` of ${d.seconds} s` : ''} was generated for ${leg}.`;
    case 'WH.0200': {
      const how = [d.status && `HTTP ${d.status}`, d.attempts && plural(d.attempts, 'attempt')].filter(Boolean);
      return `The ${d.event ?? 'status'} callback of ${leg} reached ${d.url ?? 'its URL'}${how.length ? ` (${how.join(', ')})` : ''}.`;
    }
    case 'WH.0400':
      return `The ${d.event ?? 'status'} callback of ${leg} to ${d.url ?? 'its URL'} failed${d.attempts ? ` after ${plural(d.attempts, 'attempt')}` : ''}${d.lastError ? `: ${d.lastError}` : ''}.`;
    default:
      return call ? `${label.replace(/\.$/, '')}: ${leg}.` : label;
  }
}

/** One line of the view: icon, time, call, what happened, reason, and a "raw" toggle with the frame's JSON. */
export function eventLine(frame, codes, call) {
  const { glyph, tone } = iconFor(frame.code);
  const line = el('details', `event ${tone}`);
  line.dataset.code = frame.code ?? '';
  line.dataset.call = frame.sid ?? '';
  const summary = el('summary');
  const icon = el('span', `icon ${tone}`, glyph);
  icon.setAttribute('aria-label', frame.event ?? frame.code ?? 'event');
  const at = frame.createdAt ?? frame.timestamp;
  const what = el('span', 'what');
  const reason = el('span', 'reason');
  summary.append(icon, el('time', 'at', at ? clock(at) : ''), el('span', 'code mono', frame.code ?? ''), what, reason);
  if (frame.sid) summary.append(el('span', 'call mono', frame.sid.slice(0, 12) + '…'));
  summary.append(el('span', 'rawhint', 'raw'));
  line.append(summary, el('pre', 'raw mono', JSON.stringify(frame, null, 2)));
  /** Writes the line's words; called again once the call's numbers are known. */
  line.tell = (c) => {
    const said = describe(frame, codes, c);
    what.textContent = said.what;
    reason.textContent = said.reason;
    reason.className = `reason ${said.reasonTone}`;
    reason.hidden = !said.reason;
  };
  line.tell(call);
  return line;
}

/** A time of day on the 24-hour clock. */
export const clock = (at) => new Date(at).toLocaleTimeString(undefined, { hourCycle: 'h23' });

/**
 * A call's facts by SID, each fetched once (`fetchCall(sid)` resolves to the call or null); the newest `max` kept.
 * `known(sid)` is the call if it has arrived, `get(sid)` a promise of it.
 */
export function callLookup(fetchCall, max = 500) {
  const calls = new Map();
  const get = (sid) => {
    let hit = calls.get(sid);
    if (!hit) {
      hit = { call: undefined, wait: undefined };
      hit.wait = Promise.resolve(fetchCall(sid)).then(
        (c) => (hit.call = c ?? null),
        () => null,
      );
      calls.set(sid, hit);
      if (calls.size > max) calls.delete(calls.keys().next().value);
    }
    return hit.wait;
  };
  return { get, known: (sid) => calls.get(sid)?.call ?? undefined };
}

/**
 * Mounts the filters and the list in `host`; returns `add(frame)` for each frame as it arrives (newest on top).
 * `calls` (a callLookup) names each call's numbers; a line is written at once and again when they arrive.
 */
export function mountEventView(host, codes, calls, max = 500) {
  const bar = el('form', 'row filters');
  bar.id = 'event-filters';
  const callIn = Object.assign(el('input'), { name: 'call', placeholder: 'call SID' });
  const codeIn = Object.assign(el('input'), { name: 'code', placeholder: 'code, e.g. CALL.04' });
  const l1 = el('label', '', 'Call ');
  l1.append(callIn);
  const l2 = el('label', '', 'Code ');
  l2.append(codeIn);
  bar.append(l1, l2);
  const list = el('div', 'events');
  list.id = 'events';
  const empty = el('p', 'muted', 'Waiting for events: place a call and they appear here.');
  host.append(bar, empty, list);
  const shown = (line) =>
    line.dataset.call.includes(callIn.value.trim()) && line.dataset.code.startsWith(codeIn.value.trim().toUpperCase());
  const apply = () => {
    for (const line of list.children) line.hidden = !shown(line);
  };
  callIn.addEventListener('input', apply);
  codeIn.addEventListener('input', apply);
  bar.addEventListener('submit', (e) => e.preventDefault());
  return {
    add(frame) {
      empty.remove();
      const known = frame.sid && calls ? calls.known(frame.sid) : undefined;
      const line = eventLine(frame, codes, known ?? undefined);
      if (frame.sid && calls && known === undefined) void calls.get(frame.sid).then((c) => c && line.tell(c));
      line.hidden = !shown(line);
      list.prepend(line);
      while (list.children.length > max) list.lastChild.remove();
    },
  };
}
