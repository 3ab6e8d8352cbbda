// The portal's live event view (issue 21): each stream frame as a line a person reads (an icon, the time, the
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

/** What happened, in words: the catalogue's label, then the reason code's label if the event carries one. */
export function describe(frame, codes) {
  const what = codes?.events?.[frame.code]?.label ?? frame.event ?? frame.code ?? 'event';
  const reasonCode = frame.data?.reason_code ?? frame.data?.reasonCode;
  const reason = reasonCode ? `${codes?.reasons?.[reasonCode] ?? reasonCode} (${reasonCode})` : '';
  return { what, reason };
}

/** One line of the view: icon, time, call, what happened, reason, and a "raw" toggle with the frame's JSON. */
export function eventLine(frame, codes) {
  const { glyph, tone } = iconFor(frame.code);
  const { what, reason } = describe(frame, codes);
  const line = el('details', `event ${tone}`);
  line.dataset.code = frame.code ?? '';
  line.dataset.call = frame.sid ?? '';
  const summary = el('summary');
  const icon = el('span', `icon ${tone}`, glyph);
  icon.setAttribute('aria-label', frame.event ?? frame.code ?? 'event');
  const at = frame.createdAt ?? frame.timestamp;
  summary.append(
    icon,
    el('time', 'at', at ? new Date(at).toLocaleTimeString() : ''),
    el('span', 'code mono', frame.code ?? ''),
    el('span', 'what', what),
  );
  if (reason) summary.append(el('span', 'reason', reason));
  if (frame.sid) summary.append(el('span', 'call mono', frame.sid.slice(0, 12) + '…'));
  summary.append(el('span', 'rawhint', 'raw'));
  line.append(summary, el('pre', 'raw mono', JSON.stringify(frame, null, 2)));
  return line;
}

/** Mounts the filters and the list in `host`; returns `add(frame)` for each frame as it arrives (newest on top). */
export function mountEventView(host, codes, max = 500) {
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
      const line = eventLine(frame, codes);
      line.hidden = !shown(line);
      list.prepend(line);
      while (list.children.length > max) list.lastChild.remove();
    },
  };
}
