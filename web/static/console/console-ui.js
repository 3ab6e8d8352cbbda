// Small helpers of the operator console: DOM building (text only: names and numbers from the store are never
// parsed as HTML), the JSON calls to /console/api with the anti-forgery header, tables, and a toast.
import { ApiError, requestJson } from './http-json.js';

(function () {
  'use strict';
  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const k of kids.flat()) if (k !== undefined && k !== null && k !== false) e.append(k);
    return e;
  }

  async function api(method, path, body) {
    const data = await requestJson(`/console/api${path}`, { method, body, headers: { 'X-Simu-Console': '1' } });
    return data !== null && typeof data === 'object' ? data : {};
  }

  /** A table with a header row; `rows` are arrays of cells, `attrs(i)` the attributes of row i. */
  function table(head, rows, attrs) {
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
  function toast(text) {
    document.getElementById('toast')?.remove();
    document.body.append(h('div', { id: 'toast', role: 'status' }, text));
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => document.getElementById('toast')?.remove(), 4000);
  }

  const since = (iso) => {
    if (!iso) return '';
    const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
    return s < 60
      ? `${s} s`
      : s < 3600
        ? `${Math.floor(s / 60)} min ${s % 60} s`
        : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  };

  window.ConsoleUi = { h, api, table, toast, since, ApiError };
})();
