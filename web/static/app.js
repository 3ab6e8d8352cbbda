/* global location, FormData, alert, confirm, URLSearchParams, sessionStorage, CSS, crypto */
// The Simu account portal: one page, hash routes, every call through /portal/proxy/api (the REST API as the
// signed-in account) or /portal/api (sign-in, one-time-code actions, call events, webhook routes).
import { mountSoftphone } from './softphone.js';
import { callLookup, mountEventView } from './portal-events.js';
import { callTimeline } from './portal-call.js';
import { mountCallHandling } from './call-handling.js';
import { render as renderCharts } from './charts.js';
import { esc } from './ui-kit.js';
import { requestJson } from './http-json.js';

const $ = (sel, root = document) => root.querySelector(sel);
const page = $('#page');
const badge = (v) => `<span class="badge ${esc(v)}">${esc(v)}</span>`;
const when = (t) => (t ? new Date(t).toLocaleString(undefined, { hourCycle: 'h23' }) : '');
let me = null;
let leave = () => {};

async function call(url, { method = 'GET', body, headers = {} } = {}) {
  try {
    return await requestJson(url, { method, body, headers: { 'X-Simu-Portal': '1', ...headers } });
  } catch (e) {
    if (e.status === 401 && !url.endsWith('/signin')) showSignIn();
    throw e;
  }
}
const api = (path, opts) => call(`/portal/proxy/api${path}`, opts);
const portal = (path, opts) => call(`/portal/api${path}`, opts);

function form(el) {
  return Object.fromEntries(new FormData(el).entries());
}

/** Runs an action from a button or form, showing its error next to it. */
function act(target, fn) {
  const out = target.querySelector?.('.error') ?? $('.error', page);
  return async (ev) => {
    if (ev?.type === 'submit') ev.preventDefault(); // a page-wide click handler must not block forms
    if (out) out.textContent = '';
    try {
      await fn(ev);
    } catch (e) {
      if (out) out.textContent = e.message;
      else alert(e.message);
    }
  };
}

// ---- sign-in ----
function showSignIn() {
  leave();
  $('#app').hidden = true;
  $('#signin').hidden = false;
}

$('#signin-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  $('#signin-error').textContent = '';
  try {
    me = await portal('/signin', { method: 'POST', body: form(ev.target) });
    ev.target.reset();
    start();
  } catch (e) {
    $('#signin-error').textContent = e.message;
  }
});
$('#signout').addEventListener('click', async () => {
  await portal('/signout', { method: 'POST' }).catch(() => {});
  showSignIn();
});

async function start() {
  $('#signin').hidden = true;
  $('#app').hidden = false;
  $('#me').textContent = me.email;
  if (!location.hash) location.hash = '#/dashboard';
  else route();
}

// ---- routes ----
const pages = { dashboard, charts, calls, call: callDetail, numbers, recordings, users, webhooks, keys, wallet };

async function route() {
  if (!me) return;
  leave();
  leave = () => {};
  const [name, arg] = location.hash.replace(/^#\/?/, '').split('/');
  for (const a of document.querySelectorAll('nav a'))
    a.classList.toggle('active', a.getAttribute('href') === `#/${name === 'call' ? 'calls' : name}`);
  const fn = pages[name] ?? dashboard;
  page.innerHTML = '<p>Loading…</p>';
  try {
    await fn(arg ? decodeURIComponent(arg) : undefined);
  } catch (e) {
    page.innerHTML = `<p class="error">${esc(e.message)}</p>`;
  }
}
window.addEventListener('hashchange', route);

// ---- dashboard: balance, calls, live events ----
async function dashboard() {
  const [bal, recent, acct] = await Promise.all([api('/wallet/balance'), api('/calls?limit=5'), api('/account')]);
  page.innerHTML = `
    <h1>Dashboard</h1>
    <div class="row">
      <div class="card"><div>Balance</div><div class="big">${esc(bal.balance)} ${esc(bal.currency)}</div></div>
      <div class="card"><div>Calls</div><div class="big" id="call-count">${esc(recent.total)}</div></div>
      <div class="card"><div>SIP domain</div><div class="big mono" id="sip-domain">${esc(acct.sip_domain)}</div></div>
    </div>
    <h2>Live events <span id="stream-state" class="badge">connecting</span></h2>
    <div class="card" id="event-view"></div>`;
  const codes = await portal('/codes').catch(() => null);
  const calls = callLookup((sid) => portal(`/calls/by-sid/${encodeURIComponent(sid)}`).catch(() => null));
  const view = mountEventView($('#event-view'), codes, calls);
  const count = liveCallCount($('#call-count'), recent, calls);
  const { token } = await api('/stream/token', { method: 'POST' });
  const ws = new WebSocket(
    `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/stream?token=${encodeURIComponent(token)}`,
  );
  ws.onopen = () => ($('#stream-state').textContent = 'live');
  ws.onclose = () => $('#stream-state') && ($('#stream-state').textContent = 'closed');
  ws.onmessage = (m) => {
    if (!$('#events')) return;
    let f;
    try {
      f = JSON.parse(m.data);
    } catch {
      f = { raw: m.data };
    }
    view.add(f);
    count(f);
  };
  leave = () => ws.close();
}

/**
 * Keeps the dashboard's Calls figure (`total` of the calls list when the page loaded) current from the stream: a
 * call counts once, when it starts (CALL.0100), or, for a call refused before it started, when it fails
 * (CALL.0400) if it was made after the newest call the page loaded.
 */
function liveCallCount(figure, loaded, calls) {
  let total = Number(loaded.total);
  const newest = loaded.calls[0]?.created_at ?? '';
  const counted = new Set(loaded.calls.map((c) => c.sid));
  const bump = (sid) => {
    if (counted.has(sid)) return;
    counted.add(sid);
    figure.textContent = String(++total);
  };
  return (f) => {
    if (!f.sid || counted.has(f.sid)) return;
    if (f.code === 'CALL.0100') bump(f.sid);
    else if (f.code === 'CALL.0400') void calls.get(f.sid).then((c) => c && c.created_at > newest && bump(f.sid));
  };
}

// ---- calls ----
async function calls() {
  const q = new URLSearchParams(sessionStorage.getItem('callFilters') ?? '');
  page.innerHTML = `
    <h1>Calls</h1>
    <form class="card row" id="filters">
      <label>Direction <select name="direction"><option value="">any</option><option>inbound</option><option>outbound</option><option>internal</option></select></label>
      <label>Status <select name="status"><option value="">any</option><option>initiated</option><option>ringing</option><option>answered</option><option>completed</option><option>failed</option></select></label>
      <label>Number <input name="search" placeholder="+2547…" /></label>
      <label>From <input name="from_dt" type="date" /></label>
      <label>To <input name="to_dt" type="date" /></label>
      <button>Filter</button>
    </form>
    <div id="list"></div>`;
  const f = $('#filters');
  for (const [k, v] of q) if (f.elements[k]) f.elements[k].value = v;
  const load = async () => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(form(f))) {
      if (!v) continue;
      p.set(k, k === 'from_dt' ? `${v}T00:00:00Z` : k === 'to_dt' ? `${v}T23:59:59Z` : v);
    }
    sessionStorage.setItem('callFilters', new URLSearchParams(form(f)).toString());
    p.set('limit', '50');
    const r = await api(`/calls?${p}`);
    $('#list').innerHTML =
      `<p>${r.total} calls</p><table><tr><th>Started</th><th>Direction</th><th>From</th><th>To</th><th>Status</th><th>Reason</th><th>Duration</th><th>Cost</th></tr>
      ${r.calls
        .map(
          (
            c,
          ) => `<tr><td><a href="#/call/${esc(c.uuid)}">${esc(when(c.created_at))}</a></td><td>${esc(c.direction)}</td>
          <td>${esc(c.from_number)}</td><td>${esc(c.to_number)}</td><td>${badge(c.status)}</td>
          <td>${esc(c.reason_code)}</td><td>${esc(c.duration_seconds ?? '')}</td><td>${esc(c.cost)}</td></tr>`,
        )
        .join('')}</table>`;
  };
  f.addEventListener('submit', act(f, load));
  await load();
}

// ---- a call: one time axis of its events, callbacks, recordings and charges (web/static/portal-call.js) ----
async function callDetail(uuid) {
  await callTimeline(page, uuid, { api, portal, recordingPlayer });
}

// ---- charts: the account's traffic for a chosen window, drawn by charts.js with uPlot ----
async function charts() {
  page.innerHTML = `<h1>Traffic</h1>
    <form class="row" id="chart-window"><label>Window <select name="days">
      <option value="1">Last 24 hours</option><option value="7" selected>Last 7 days</option>
      <option value="30">Last 30 days</option><option value="90">Last 90 days</option></select></label></form>
    <div id="charts"></div>`;
  const pick = $('#chart-window select');
  const draw = async () => renderCharts($('#charts'), await portal(`/charts?days=${pick.value}`));
  pick.addEventListener('change', () => void draw());
  await draw();
}

function recordingPlayer(r, compact = false) {
  const div = document.createElement('div');
  div.className = 'row';
  div.innerHTML = compact
    ? '<button class="secondary">Play</button>'
    : `<span class="mono">${esc(r.uuid)}</span> <span>${esc(r.duration_seconds ?? '?')} s</span> <button class="secondary">Play</button>`;
  div.querySelector('button').addEventListener('click', async () => {
    const d = await api('/recordings/download', { method: 'POST', body: { uuid: r.uuid } });
    const audio = document.createElement('audio');
    audio.controls = true;
    audio.src = d.url;
    div.querySelector('button').replaceWith(audio);
    audio.play().catch(() => {});
  });
  return div;
}

// ---- numbers ----
async function numbers() {
  const [owned, pool] = await Promise.all([api('/numbers'), api('/numbers/available')]);
  page.innerHTML = `
    <h1>Numbers</h1><p class="error"></p>
    <table><tr><th>Number</th><th>Name</th><th>Inbound route</th><th></th></tr>
    ${owned
      .map(
        (n) => `<tr><td>${esc(n.number)}</td><td>${esc(n.friendly_name)}</td>
        <td>${esc(n.webhook_inbound.url)} <span class="badge">${esc(n.webhook_inbound.source)}</span></td>
        <td><button class="secondary" data-configure="${esc(n.uuid)}">Configure</button>
            <button class="danger" data-release="${esc(n.uuid)}">Release</button></td></tr>
        <tr hidden id="cfg-${esc(n.uuid)}"><td colspan="4"><form class="row" data-uuid="${esc(n.uuid)}">
          <label>Name <input name="friendly_name" value="${esc(n.friendly_name)}" /></label>
          ${['voice_inbound', 'voice_outbound', 'status']
            .map((p) => `<label>${p} <input name="${p}" size="28" value="${esc(n.webhook_urls[p] ?? '')}" /></label>`)
            .join('')}
          <button>Save</button></form></td></tr>`,
      )
      .join('')}</table>
    <h2>Available</h2>
    <table>${pool.map((p) => `<tr><td>${esc(p.number)}</td><td><button data-acquire="${esc(p.uuid)}">Acquire</button></td></tr>`).join('') || '<tr><td>The pool is empty.</td></tr>'}</table>`;
  page.addEventListener('click', numberClick);
  leave = () => page.removeEventListener('click', numberClick);
  for (const f of page.querySelectorAll('form[data-uuid]'))
    f.addEventListener(
      'submit',
      act(page, async () => {
        const v = form(f);
        await api('/numbers/configure', {
          method: 'POST',
          body: {
            uuid: f.dataset.uuid,
            friendly_name: v.friendly_name,
            webhook_urls: { voice_inbound: v.voice_inbound, voice_outbound: v.voice_outbound, status: v.status },
          },
        });
        route();
      }),
    );
}

const numberClick = act(page, async (ev) => {
  const b = ev.target.closest('button');
  if (!b) return;
  if (b.dataset.configure) $(`#cfg-${CSS.escape(b.dataset.configure)}`).hidden ^= true;
  if (b.dataset.release && confirm('Release this number?')) {
    await api('/numbers/release', { method: 'POST', body: { uuid: b.dataset.release } });
    route();
  }
  if (b.dataset.acquire) {
    await api('/numbers/acquire', {
      method: 'POST',
      body: { uuid: b.dataset.acquire },
      headers: { 'Idempotency-Key': crypto.randomUUID() },
    });
    route();
  }
});

// ---- recordings ----
async function recordings() {
  const recs = await api('/recordings?limit=100');
  page.innerHTML = `<h1>Recordings</h1><p class="error"></p><table id="rec-table"><tr><th>Created</th><th>Call</th><th>Duration</th><th>Size</th><th></th></tr></table>`;
  for (const r of recs) {
    const tr = document.createElement('tr');
    tr.innerHTML = `<td>${esc(when(r.created_at))}</td><td><a href="#/call/${esc(r.call_uuid)}">${esc(r.call_sid)}</a></td>
      <td>${esc(r.duration_seconds ?? '')}</td><td>${esc(r.size_bytes ?? '')}</td><td></td>`;
    const cell = tr.lastElementChild;
    cell.className = 'row';
    cell.append(recordingPlayer(r, true));
    const del = document.createElement('button');
    del.className = 'danger';
    del.textContent = 'Delete';
    del.onclick = act(page, async () => {
      if (!confirm('Delete this recording?')) return;
      await api('/recordings/delete', { method: 'POST', body: { uuid: r.uuid } });
      route();
    });
    cell.append(del);
    $('#rec-table').append(tr);
  }
}

// ---- end-users and the softphone ----
async function users() {
  const [list, acct] = await Promise.all([api('/users'), api('/account')]);
  page.innerHTML = `
    <h1>End-users</h1>
    <p>Phones register as <code>sip:&lt;extension&gt;@${esc(acct.sip_domain)}</code>, the phone token as password
    (docs/softphones.md).</p>
    <form class="card row" id="new-user">
      <label>Email <input name="email" type="email" required /></label>
      <label>Display name <input name="display_name" /></label>
      <button>Create</button><p class="error"></p>
    </form>
    <table><tr><th>Extension</th><th>Email</th><th>Name</th><th>Registration</th><th>State</th><th></th></tr>
    ${list
      .map(
        (u) => `<tr><td>${esc(u.extension_number)}</td><td>${esc(u.email)}</td><td>${esc(u.display_name)}</td>
        <td>${esc(u.registration_state)}</td><td>${badge(u.is_active ? 'active' : 'disabled')}</td>
        <td><button class="secondary" data-toggle="${esc(u.uuid)}" data-active="${u.is_active}">${u.is_active ? 'Disable' : 'Enable'}</button>
        ${u.is_active ? `<button data-mint="${esc(u.uuid)}">Phone token</button>` : ''}
        <button class="secondary" data-handling="${esc(u.uuid)}">Calls${u.dnd ? ' (DND)' : ''}</button></td></tr>`,
      )
      .join('')}</table>
    <div id="phone"></div>`;
  const f = $('#new-user');
  f.addEventListener(
    'submit',
    act(f, async () => {
      await api('/users/create', { method: 'POST', body: form(f) });
      route();
    }),
  );
  const click = act(page, async (ev) => {
    const b = ev.target.closest('button');
    if (!b) return;
    if (b.dataset.toggle) {
      await api('/users/update', {
        method: 'POST',
        body: { uuid: b.dataset.toggle, is_active: b.dataset.active !== 'true' },
      });
      route();
    }
    if (b.dataset.handling) {
      const u = list.find((x) => x.uuid === b.dataset.handling);
      if (u) await mountCallHandling($('#phone'), u, api, route);
    }
    if (b.dataset.mint) {
      const minted = await api('/phone-tokens/mint', { method: 'POST', body: { uuid: b.dataset.mint } });
      const box = $('#phone');
      box.innerHTML = `<h2>Phone token for extension ${esc(minted.phone_token.extension_number)}</h2>
        <div class="card"><p>Expires ${esc(when(minted.phone_token.expires_at))}. Hand <code>token</code> and
        <code>iceServers</code> to a softphone; this page can run one:</p>
        <div class="secret mono" id="phone-token">${esc(minted.token)}</div><div id="softphone"></div></div>`;
      const phone = mountSoftphone($('#softphone'), {
        token: minted.token,
        iceServers: minted.iceServers,
        server: me.sip_websocket,
      });
      leave = () => phone.close();
      window.simuPhone = phone; // for tests and the console
    }
  });
  page.addEventListener('click', click);
  const prev = leave;
  leave = () => {
    prev();
    page.removeEventListener('click', click);
  };
}

// ---- webhooks ----
/** A status route as the account knows it: its own status URL, or a number's status override. */
function routeName(r) {
  if (r.route === 'status') return 'account status URL';
  return `status override of ${r.number ?? 'a released number'}`;
}
async function webhooks() {
  const [cfg, routes] = await Promise.all([api('/account/webhooks'), portal('/webhook-routes')]);
  page.innerHTML = `
    <h1>Webhooks</h1>
    <form class="card" id="endpoints"><h2>Account endpoints</h2>
      ${['voice_inbound', 'voice_outbound', 'status']
        .map(
          (p) =>
            `<div class="row"><label>${p} <input name="${p}" size="50" value="${esc(cfg.endpoints[p] ?? '')}" /></label></div>`,
        )
        .join('')}
      <h2>Fallback</h2>
      <div class="row"><label>Mode <select name="fallback_mode">${['message', 'play', 'drop']
        .map((m) => `<option ${m === cfg.fallback_mode ? 'selected' : ''}>${m}</option>`)
        .join('')}</select></label>
      <label>Text or audio URL <input name="fallback_value" size="50" value="${esc(cfg.fallback_value)}" /></label>
      <button>Save</button></div><p class="error"></p></form>
    <div class="card"><h2>Signing secret</h2><div class="row"><span id="secret" class="mono">••••••••</span>
      <button class="secondary" id="show-secret">Show</button><button class="danger" id="rotate">Rotate</button></div></div>
    <h2>Status routes</h2>
    <table id="routes"><tr><th>Route</th><th>URL</th><th>State</th><th>Failures</th><th></th></tr>${
      routes
        .map(
          (
            r,
          ) => `<tr><td class="mono">${esc(routeName(r))}</td><td class="mono">${esc(r.url)}</td><td>${badge(r.disabled ? 'disabled' : 'active')} ${esc(when(r.disabled_at))}</td>
        <td>${r.consecutive_failures}</td><td>${r.disabled ? `<button data-enable="${esc(r.url)}" data-route="${esc(r.route)}">Re-enable</button>` : ''}</td></tr>`,
        )
        .join('') || '<tr><td colspan="5">No status deliveries yet.</td></tr>'
    }</table>
    ${cfg.numbers.length ? `<h2>Per-number overrides</h2><table>${cfg.numbers.map((n) => `<tr><td>${esc(n.number)}</td><td>${esc(n.purpose)}</td><td>${esc(n.url)}</td></tr>`).join('')}</table>` : ''}`;
  const f = $('#endpoints');
  f.addEventListener(
    'submit',
    act(f, async () => {
      const v = form(f);
      for (const purpose of ['voice_inbound', 'voice_outbound', 'status'])
        if ((cfg.endpoints[purpose] ?? '') !== v[purpose])
          await api('/account/webhooks', { method: 'POST', body: { purpose, url: v[purpose] } });
      await api('/account/webhooks', {
        method: 'POST',
        body: { fallback_mode: v.fallback_mode, fallback_value: v.fallback_value },
      });
      route();
    }),
  );
  $('#show-secret').onclick = act(
    page,
    async () => ($('#secret').textContent = (await api('/account/webhooks/secret')).signing_secret),
  );
  $('#rotate').onclick = act(page, async () => {
    if (!confirm('Rotate the signing secret? The old one stops verifying at once.')) return;
    $('#secret').textContent = (await api('/account/webhooks/secret/rotate', { method: 'POST' })).signing_secret;
  });
  for (const b of page.querySelectorAll('[data-enable]'))
    b.onclick = act(page, async () => {
      await portal('/webhook-routes/enable', {
        method: 'POST',
        body: { route: b.dataset.route, url: b.dataset.enable },
      });
      route();
    });
}

// ---- API keys ----
async function keys() {
  const list = await api('/keys');
  page.innerHTML = `
    <h1>API keys</h1>
    <form class="card row" id="new-key">
      <label>Name <input name="name" required /></label>
      <label>One-time code <input name="code" inputmode="numeric" pattern="[0-9]{6}" autocomplete="one-time-code" required /></label>
      <button>Create key</button><p class="error"></p>
    </form>
    <div id="new-secret"></div>
    <table id="key-table"><tr><th>Name</th><th>Prefix</th><th>State</th><th>Last used</th><th>Created</th><th></th></tr>
    ${list
      .filter((k) => k.name !== 'portal-session')
      .map(
        (
          k,
        ) => `<tr><td>${esc(k.name)}</td><td class="mono">${esc(k.prefix)}…</td><td>${badge(k.is_active ? 'active' : 'disabled')}</td>
        <td>${esc(when(k.last_used_at))}</td><td>${esc(when(k.created_at))}</td>
        <td>${k.is_active ? `<button class="danger" data-revoke="${esc(k.uuid)}">Revoke</button>` : ''}</td></tr>`,
      )
      .join('')}</table>`;
  const f = $('#new-key');
  f.addEventListener(
    'submit',
    act(f, async () => {
      const k = await portal('/keys/create', { method: 'POST', body: form(f) });
      f.reset();
      const list2 = await api('/keys');
      await keys.call(null, list2);
      $('#new-secret').innerHTML =
        `<div class="card"><p class="ok">Key “${esc(k.name)}” created. Copy it now: it is shown only once.</p>
        <div class="secret mono" id="key-secret">${esc(k.key)}</div></div>`;
    }),
  );
  for (const b of page.querySelectorAll('[data-revoke]'))
    b.onclick = act(page, async () => {
      if (!confirm('Revoke this key?')) return;
      await api('/keys/revoke', { method: 'POST', body: { uuid: b.dataset.revoke } });
      route();
    });
}

// ---- wallet ----
async function wallet() {
  const [bal, txs] = await Promise.all([api('/wallet/balance'), api('/wallet/transactions?limit=100')]);
  page.innerHTML = `
    <h1>Wallet</h1>
    <div class="card"><div>Balance</div><div class="big" id="balance">${esc(bal.balance)} ${esc(bal.currency)}</div></div>
    <table><tr><th>Time</th><th>Kind</th><th>Direction</th><th>Amount</th><th>Balance before</th></tr>
    ${txs
      .map(
        (t) =>
          `<tr><td>${esc(when(t.created_at))}</td><td>${esc(t.kind)}</td><td>${esc(t.direction)}</td><td>${esc(t.amount)}</td><td>${esc(t.balance_before)}</td></tr>`,
      )
      .join('')}</table>`;
}

// ---- boot ----
portal('/me')
  .then((m) => {
    me = m;
    start();
  })
  .catch(() => showSignIn());
