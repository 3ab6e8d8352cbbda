// Charts shared by the portal and the operator console, drawn with uPlot (served by the switch from
// node_modules, never a CDN). Colours: the Okabe-Ito palette, distinguishable with the common colour-vision
// deficiencies; every chart also has its figures as text (the summary line and the table under it).
import { h } from './ui-kit.js';

const C = { blue: '#0072B2', orange: '#E69F00', green: '#009E73', red: '#D55E00', purple: '#CC79A7' };
const fmtInt = (n) => Math.round(n).toLocaleString('en');
const fmtPct = (r) => (r == null ? '–' : `${(r * 100).toFixed(1)} %`);
const fmtSecs = (s) =>
  s == null ? '–' : s >= 60 ? `${Math.floor(s / 60)} min ${Math.round(s % 60)} s` : `${s.toFixed(1)} s`;
const fmtMoney = (cents) =>
  `${(cents / 100).toLocaleString('en', { minimumFractionDigits: 2, maximumFractionDigits: 2 })} KES`;

/** Every bucket of the window, with zeros where no calls were made (the roll-up only has rows for busy hours). */
function buckets(data) {
  const step = data.window.bucket === 'hour' ? 3600 : 86400;
  const from = Math.floor(Date.parse(data.window.from) / 1000 / step) * step;
  const to = Date.parse(data.window.to) / 1000;
  const byKey = new Map(data.series.map((p) => [p.bucket, p]));
  const fails = new Map(data.webhook_failures.map((p) => [p.bucket, p.failures]));
  const out = { t: [], calls: [], answered: [], rate: [], avg: [], spend: [], fails: [] };
  for (let t = from; t < to; t += step) {
    const key = new Date(t * 1000).toISOString().slice(0, step === 3600 ? 13 : 10);
    const p = byKey.get(key);
    out.t.push(t);
    out.calls.push(p ? p.calls : 0);
    out.answered.push(p ? p.answered : 0);
    out.rate.push(p && p.answer_rate != null ? p.answer_rate * 100 : null);
    out.avg.push(p ? p.average_talk_seconds : null);
    out.spend.push(p ? p.cost_cents / 100 : 0);
    out.fails.push(fails.get(key) || 0);
  }
  return out;
}

// Time labels: 24-hour clock, day before month ("18:00", "28 Nov"), in the browser's time zone and month names.
const monthOf = new Intl.DateTimeFormat(undefined, { month: 'short' });
const clockOf = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
const DAY_TICKS = [1, 2, 7, 14, 28].map((n) => n * 86400);
const fmtDay = (d) => `${d.getDate()} ${monthOf.format(d)}`;
const fmtWhen = (s) => {
  const d = new Date(s * 1000);
  return `${fmtDay(d)} ${d.getFullYear()} ${clockOf.format(d)}`;
};
/** Tick labels: days for a daily step; otherwise the time, with the day under it where the day changes. */
function timeTicks(u, splits, axisIdx, space, incr) {
  let lastDay = '';
  return splits.map((s) => {
    const d = new Date(s * 1000);
    const day = fmtDay(d);
    if (incr >= 86400) return day;
    const label = day === lastDay ? clockOf.format(d) : `${clockOf.format(d)}\n${day}`;
    lastDay = day;
    return label;
  });
}

/**
 * One chart in its own card, as wide as the card and following it when it resizes. The x range runs half a
 * bucket past the first and the last bucket so their bars are whole.
 */
function plot(host, title, step, x, series, yLabel) {
  const box = h('figure', { class: 'chart' }, h('figcaption', {}, title));
  host.append(box);
  const inner = () => {
    const cs = window.getComputedStyle(box);
    return Math.max(240, Math.floor(box.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)));
  };
  const bars = window.uPlot.paths && window.uPlot.paths.bars ? window.uPlot.paths.bars({ size: [0.8, 40] }) : undefined;
  const opts = {
    width: inner(),
    height: 200,
    legend: { show: true },
    scales: {
      x: {
        time: true,
        range: (u, min, max) => [(min ?? 0) - step / 2, (max ?? 0) + step / 2],
      },
    },
    axes: [
      // Daily buckets get a tick per day (or per few days), never a clock time.
      { stroke: '#333', values: timeTicks, ...(step >= 86400 && { incrs: DAY_TICKS }) },
      { stroke: '#333', label: yLabel, size: 60 },
    ],
    series: [
      { value: (u, v) => (v == null ? '–' : fmtWhen(v)) },
      ...series.map((s) => ({
        label: s.label,
        stroke: s.color,
        fill: s.bar ? s.color + 'cc' : undefined,
        width: s.bar ? 0 : 2,
        paths: s.bar ? bars : undefined,
        points: { show: !s.bar, size: 6 },
        spanGaps: !s.bar,
        value: (u, v) => (v == null ? '–' : s.fmt ? s.fmt(v) : fmtInt(v)),
      })),
    ],
  };
  const u = new window.uPlot(opts, [x, ...series.map((s) => s.data)], box);
  // The instance stays reachable from its card (the browser tests read its scale).
  box.uplot = u;
  if (window.ResizeObserver)
    new window.ResizeObserver(() => {
      const w = inner();
      if (w !== u.width) u.setSize({ width: w, height: 200 });
    }).observe(box);
  return u;
}

/** Draws the summary figures, the time charts and the destinations table of `data` (GET .../charts) in `host`. */
export function render(host, data) {
  host.replaceChildren();
  const t = data.totals;
  host.append(
    h(
      'dl',
      { class: 'figures' },
      ...[
        ['Calls', fmtInt(t.calls)],
        ['Answer rate', fmtPct(t.answer_rate)],
        ['Average talk time', fmtSecs(t.average_talk_seconds)],
        ['Spend', fmtMoney(t.cost_cents)],
        ['Webhook failures', fmtInt(t.webhook_failures)],
      ].map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))),
    ),
  );
  if (!window.uPlot) {
    host.append(h('p', { class: 'error' }, 'The charting library did not load.'));
    return;
  }
  const b = buckets(data);
  const per = data.window.bucket === 'hour' ? 'per hour' : 'per day';
  const step = data.window.bucket === 'hour' ? 3600 : 86400;
  plot(host, `Calls ${per}`, step, b.t, [
    { label: 'calls', color: C.blue, data: b.calls, bar: true },
    { label: 'answered', color: C.orange, data: b.answered },
  ]);
  plot(
    host,
    `Answer rate ${per}`,
    step,
    b.t,
    [{ label: 'answered', color: C.green, data: b.rate, fmt: (v) => `${v.toFixed(1)} %` }],
    '%',
  );
  plot(
    host,
    `Average talk time ${per}`,
    step,
    b.t,
    [{ label: 'seconds', color: C.purple, data: b.avg, fmt: fmtSecs }],
    's',
  );
  plot(
    host,
    `Spend ${per}`,
    step,
    b.t,
    [{ label: 'KES', color: C.blue, data: b.spend, bar: true, fmt: (v) => v.toFixed(2) }],
    'KES',
  );
  plot(host, `Webhook failures ${per}`, step, b.t, [{ label: 'failures', color: C.red, data: b.fails, bar: true }]);
  const max = Math.max(1, ...data.destinations.map((d) => d.calls));
  host.append(
    h('h3', {}, 'Top destinations (outbound, by number prefix)'),
    data.destinations.length === 0
      ? h('p', { class: 'muted' }, 'No outbound calls in this window.')
      : h(
          'table',
          { class: 'dest' },
          h(
            'tr',
            {},
            h('th', {}, 'Prefix'),
            h('th', {}, 'Calls'),
            h('th', {}, ''),
            h('th', {}, 'Answered'),
            h('th', {}, 'Spend'),
          ),
          ...data.destinations.map((d) => {
            const bar = h('span', { class: 'bar' });
            bar.style.width = `${(100 * d.calls) / max}%`;
            return h(
              'tr',
              {},
              h('td', {}, `${d.prefix}…`),
              h('td', {}, fmtInt(d.calls)),
              h('td', { class: 'barcell' }, bar),
              h('td', {}, fmtPct(d.calls ? d.answered / d.calls : null)),
              h('td', {}, fmtMoney(d.cost_cents)),
            );
          }),
        ),
  );
}
