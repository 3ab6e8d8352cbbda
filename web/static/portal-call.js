// A call on one time axis: its events, the status callbacks sent for it (state, attempts, how long
// delivery took), the verbs it ran (their events), its recordings with a player, and what it cost.
import { describe, iconFor } from './portal-events.js';

const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
};
const KINDS = { call: 'talk time', tts: 'speech (Say)' };
const secs = (ms) => `${ms < 0 ? '−' : '+'}${(Math.abs(ms) / 1000).toFixed(1)} s`;

/** Everything that happened to the call, as points in time (ms since the call was created), oldest first. */
function points(call, tl, recs, codes) {
  const t0 = Date.parse(call.created_at);
  const out = [];
  for (const e of tl.events) {
    const { what, reason, reasonTone } = describe({ ...e, createdAt: e.timestamp, sid: call.sid }, codes, call);
    out.push({
      at: Date.parse(e.timestamp) - t0,
      kind: 'event',
      code: e.code,
      title: what,
      detail: reason,
      reasonTone,
      raw: e,
    });
  }
  for (const w of tl.webhooks) {
    const ok = w.state === 'delivered';
    out.push({
      at: Date.parse(w.created_at) - t0,
      kind: 'webhook',
      code: ok ? 'WH.0200' : w.state === 'failed' ? 'WH.0400' : 'WH',
      title: `Status callback ${w.event} → ${w.url}`,
      detail: `${w.state}, ${w.attempts} attempt${w.attempts === 1 ? '' : 's'}${w.latency_ms != null ? `, ${w.latency_ms} ms to deliver` : ''}${w.last_error ? `; last error: ${w.last_error}` : ''}`,
      raw: w,
    });
  }
  for (const r of recs)
    out.push({
      at: Date.parse(r.created_at) - t0,
      kind: 'recording',
      code: 'REC',
      title: `Recording, ${r.duration_seconds ?? '?'} s`,
      rec: r,
    });
  for (const c of tl.charges)
    out.push({
      at: Date.parse(c.created_at) - t0,
      kind: 'charge',
      code: 'BILL.0300',
      title: `Charged for ${KINDS[c.kind] ?? c.kind}`,
      detail: `${(c.amount_cents / 100).toFixed(2)} KES`,
    });
  return out.filter((p) => Number.isFinite(p.at)).sort((a, b) => a.at - b.at);
}

/** Renders the call page into `page`. `h` holds the portal's helpers: api, portal, recordingPlayer, badge. */
export async function callTimeline(page, uuid, h) {
  const [call, tl, recs, codes] = await Promise.all([
    h.api(`/calls/${uuid}`),
    h.portal(`/calls/${uuid}/timeline`),
    h.api(`/recordings?call_uuid=${encodeURIComponent(uuid)}`),
    h.portal('/codes').catch(() => null),
  ]);
  const pts = points(call, tl, recs, codes);
  const span = Math.max(1000, ...pts.map((p) => p.at));
  page.replaceChildren();
  const head = el('div', 'card call-head');
  const reason = call.reason_code ? `${codes?.reasons?.[call.reason_code] ?? ''} (${call.reason_code})` : '';
  head.append(
    el('h1', '', `${call.from_number} → ${call.to_number}`),
    el(
      'p',
      'muted',
      `${call.direction} call ${call.sid}, ${new Date(call.created_at).toLocaleString(undefined, { hourCycle: 'h23' })}`,
    ),
  );
  const facts = el('dl', 'facts');
  for (const [k, v] of [
    ['Status', call.status],
    ['Reason', reason || '–'],
    ['Duration', call.duration_seconds != null ? `${call.duration_seconds} s` : '–'],
    ['Talk time', call.talk_seconds != null ? `${call.talk_seconds} s` : '–'],
    ['Cost', call.cost != null ? `${call.cost} KES` : '–'],
  ]) {
    const d = el('div');
    d.append(el('dt', '', k), el('dd', '', v));
    facts.append(d);
  }
  head.append(facts);
  // The axis: each point a mark at its time, coloured as its icon; hover or focus shows what it was.
  const axis = el('div', 'axis');
  axis.setAttribute('role', 'img');
  axis.setAttribute('aria-label', `Time axis of ${pts.length} things over ${(span / 1000).toFixed(1)} s`);
  for (const p of pts) {
    const m = el('span', `mark ${iconFor(p.code).tone} ${p.kind}`);
    m.style.left = `${Math.min(100, Math.max(0, (100 * p.at) / span))}%`;
    m.title = `${secs(p.at)} ${p.title}`;
    axis.append(m);
  }
  const scale = el('div', 'axis-scale');
  scale.append(el('span', '', '0 s'), el('span', '', `${(span / 1000).toFixed(1)} s`));
  const list = el('ol', 'timeline');
  list.id = 'timeline';
  for (const p of pts) {
    const li = el('li', `tl ${p.kind}`);
    li.dataset.kind = p.kind;
    const { glyph, tone } = iconFor(p.code);
    li.append(el('span', `icon ${tone}`, p.kind === 'recording' ? '●' : glyph), el('time', 'mono', secs(p.at)));
    const body = el('div', 'tl-body');
    body.append(el('strong', '', p.title));
    if (p.detail) body.append(el('div', p.reasonTone ? `reason ${p.reasonTone}` : 'muted', p.detail));
    if (p.rec) body.append(h.recordingPlayer(p.rec));
    if (p.raw) {
      const raw = el('details', 'rawbox');
      raw.append(el('summary', '', 'raw'), el('pre', 'mono', JSON.stringify(p.raw, null, 2)));
      body.append(raw);
    }
    li.append(body);
    list.append(li);
  }
  const cost = el('table', 'cost');
  cost.id = 'cost';
  const total = tl.charges.reduce((a, c) => a + c.amount_cents, 0);
  cost.append(
    ...tl.charges.map((c) => {
      const tr = el('tr');
      tr.append(el('td', '', KINDS[c.kind] ?? c.kind), el('td', 'num', (c.amount_cents / 100).toFixed(2)));
      return tr;
    }),
  );
  const tr = el('tr', 'total');
  tr.append(el('th', '', 'Total (KES)'), el('th', 'num', (total / 100).toFixed(2)));
  cost.append(tr);
  page.append(head, el('h2', '', 'Timeline'), axis, scale, list, el('h2', '', 'Cost'), cost);
}
