// The small UI kit of the portal and the operator console (both ES modules): DOM building from text (names and
// numbers from the store are never parsed as HTML), HTML escaping for the portal's templates, tables, a toast,
// and durations.

/** An element: `attrs` as attributes (`on…` functions as listeners; null, undefined and false left out). */
export function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const k of kids.flat()) if (k !== undefined && k !== null && k !== false) e.append(k);
  return e;
}

/** `v` as text safe inside HTML and attribute values. */
export const esc = (v) =>
  String(v ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
  );

/** A table with a header row; `rows` are arrays of cells, `attrs(i)` the attributes of row i. */
export function table(head, rows, attrs) {
  return h(
    'div',
    { class: 'scroll' },
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          head.map((c) => h('th', {}, c)),
        ),
      ),
      h(
        'tbody',
        {},
        rows.map((r, i) =>
          h(
            'tr',
            attrs ? attrs(i) : {},
            r.map((c) => h('td', {}, c)),
          ),
        ),
      ),
    ),
  );
}

let toastTimer;
/** A message at the bottom of the page for four seconds. */
export function toast(text) {
  document.getElementById('toast')?.remove();
  document.body.append(h('div', { id: 'toast', role: 'status' }, text));
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => document.getElementById('toast')?.remove(), 4000);
}

/** How long ago `iso` was, in seconds, minutes or hours. */
export const since = (iso) => {
  if (!iso) return '';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 60
    ? `${s} s`
    : s < 3600
      ? `${Math.floor(s / 60)} min ${s % 60} s`
      : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
};
