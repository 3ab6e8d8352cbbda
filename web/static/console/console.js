/* global location, FormData, URLSearchParams, confirm */
// The operator console's pages. Every action calls /console/api, which runs the operation the CLI runs
// and writes the audit log.
import { h, table, toast, since } from './ui-kit.js';
import { api, ApiError } from './console-ui.js';
import { render as renderCharts } from './charts.js';

const $ = (s) => document.querySelector(s);
const page = $('#page');
let timer;

/** The actions that stop traffic ask first. */
const sure = (question) => confirm(question);
const pill = (text, kind) => h('span', { class: `pill ${kind || ''}` }, text);
const act = (label, fn, cls) =>
  h(
    'button',
    {
      class: cls,
      onclick: async (e) => {
        e.target.disabled = true;
        try {
          await fn();
        } catch (err) {
          toast(err.message);
        } finally {
          e.target.disabled = false;
        }
      },
    },
    label,
  );
const form = (id, fields, submit, onSubmit) => {
  const f = h(
    'form',
    { class: 'inline', id },
    fields.map(([name, label, attrs]) => h('label', {}, label, h('input', { name, ...attrs }))),
    h('button', {}, submit),
  );
  f.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      await onSubmit(Object.fromEntries(new FormData(f)));
      f.reset();
    } catch (err) {
      toast(err.message);
    }
  });
  return f;
};

const pages = {
  async live() {
    const d = await api('GET', '/live');
    const engines = d.rtpengine.map((e) =>
      pill(
        `${e.address} ${e.healthy ? 'up' : 'DOWN'}${e.restarts || e.losses ? ` (lost ${e.losses || 0}, restarted ${e.restarts || 0})` : ''}`,
        e.healthy ? 'ok' : 'bad',
      ),
    );
    return [
      h('h1', {}, 'Live'),
      h(
        'dl',
        { class: 'figures' },
        h('div', {}, h('dt', {}, 'Calls in progress'), h('dd', { id: 'live-count' }, String(d.calls.length))),
        h('div', {}, h('dt', {}, 'Calls per second'), h('dd', {}, d.calls_per_second.toFixed(1))),
        h(
          'div',
          {},
          h('dt', {}, 'Registered phones'),
          h('dd', {}, d.registrations == null ? '–' : String(d.registrations)),
        ),
        h(
          'div',
          {},
          h('dt', {}, 'Shedding load'),
          h('dd', {}, d.overload && d.overload.shedding ? pill('yes, refusing new calls', 'bad') : pill('no', 'ok')),
        ),
      ),
      h('p', {}, 'rtpengine: ', engines.length ? engines : pill('none', 'bad')),
      d.calls.length === 0
        ? h('p', { class: 'muted', id: 'no-live-calls' }, 'No calls in progress.')
        : table(
            ['Account', 'Direction', 'From', 'To', 'State', 'For', '', ''],
            d.calls.map((c) => [
              c.account_name || c.account_id,
              c.direction,
              c.from_number,
              c.to_number,
              pill(c.status, c.status === 'answered' ? 'ok' : ''),
              since(c.answered_at || c.created_at),
              h('a', { href: `#/sip?call=${encodeURIComponent(c.id)}`, class: 'sip-ladder' }, 'SIP'),
              act('Hang up', () => api('POST', `/calls/${c.id}/hangup`).then(() => toast('Hung up.')), 'danger hangup'),
            ]),
            (i) => ({ 'data-call': d.calls[i].id }),
          ),
    ];
  },
  /** A call's SIP messages as the switch keeps them (its legs' too): who sent what to whom, in order. */
  async sip() {
    const call = new URLSearchParams(location.hash.split('?')[1] || '').get('call') || '';
    const find = h(
      'form',
      { class: 'inline', id: 'sip-find' },
      h('label', {}, 'Call sid or uuid', h('input', { name: 'call', value: call, required: true, size: 40 })),
      h('button', {}, 'Show'),
    );
    find.addEventListener('submit', (e) => {
      e.preventDefault();
      location.hash = `#/sip?call=${encodeURIComponent(new FormData(find).get('call').trim())}`;
    });
    const head = [h('h1', {}, 'SIP ladder'), find];
    if (!call) return head;
    let d;
    try {
      d = await api('GET', `/calls/${encodeURIComponent(call)}/sip`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return [...head, h('p', { class: 'muted' }, err.message)];
      throw err;
    }
    const at = (m) => `${m.src.address}:${m.src.port}`;
    const to = (m) => `${m.dst.address}:${m.dst.port}`;
    return [
      ...head,
      h(
        'p',
        { class: 'muted' },
        `${d.messages.length} messages; bin/simu trace ${call} --pcap FILE writes them for Wireshark.`,
      ),
      table(
        ['Time', 'From', '', 'To', 'Message'],
        d.messages.map((m) => [
          m.at.slice(11, 23),
          at(m),
          m.direction === 'in' ? '→ switch' : 'switch →',
          to(m),
          h('details', {}, h('summary', {}, `${m.first_line} (${m.transport})`), h('pre', {}, m.text)),
        ]),
        (i) => ({ 'data-direction': d.messages[i].direction }),
      ),
    ];
  },
  async accounts() {
    const rows = await api('GET', '/accounts');
    return [
      h('h1', {}, 'Accounts'),
      form(
        'new-account',
        [
          ['name', 'Name', { required: true, maxlength: 200 }],
          ['balance', 'Opening balance', { value: '0.00', size: 8 }],
        ],
        'Create account',
        async (v) => {
          const r = await api('POST', '/accounts', v);
          toast(`Account created. Its API key (shown once): ${r.api_key}`);
          await show();
        },
      ),
      h('h2', {}, `${rows.length} accounts`),
      table(
        ['Name', 'Status', 'Balance', 'Caps (calls / cps / max s)', 'Top up', 'Caps', ''],
        rows.map((a) => [
          h('span', {}, a.name, h('br'), h('small', { class: 'muted' }, a.uuid)),
          pill(a.status, a.status === 'active' ? 'ok' : 'bad'),
          a.balance,
          `${a.caps.concurrency} / ${a.caps.cps} / ${a.caps.max_duration_seconds}`,
          form(
            `topup-${a.uuid}`,
            [
              ['amount', 'Amount', { required: true, size: 7, placeholder: '500.00' }],
              ['reason', 'Reason', { size: 14, maxlength: 500 }],
            ],
            'Top up',
            async (v) => {
              const r = await api('POST', `/accounts/${a.uuid}/topup`, v);
              toast(`Balance now ${r.balance}`);
              await show();
            },
          ),
          form(
            `caps-${a.uuid}`,
            [
              ['concurrency', 'Calls', { size: 4, placeholder: a.caps.concurrency }],
              ['cps', 'cps', { size: 3, placeholder: a.caps.cps }],
            ],
            'Set',
            async (v) => {
              await api('POST', `/accounts/${a.uuid}/caps`, {
                concurrency: v.concurrency || undefined,
                cps: v.cps || undefined,
              });
              await show();
            },
          ),
          a.status === 'active'
            ? act(
                'Suspend',
                () =>
                  sure(`Suspend ${a.name}? Its keys stop working and its new calls are refused.`) &&
                  api('POST', `/accounts/${a.uuid}/suspend`).then(show),
                'danger suspend',
              )
            : act('Resume', () => api('POST', `/accounts/${a.uuid}/resume`).then(show), 'resume'),
        ]),
        (i) => ({ 'data-account': rows[i].uuid }),
      ),
    ];
  },
  async charts() {
    const accounts = await api('GET', '/accounts');
    const host = h('div', { id: 'charts' });
    const days = h(
      'select',
      { name: 'days', 'aria-label': 'Window' },
      [
        ['1', 'Last 24 hours'],
        ['7', 'Last 7 days'],
        ['30', 'Last 30 days'],
        ['90', 'Last 90 days'],
      ].map(([v, t]) => h('option', { value: v, selected: v === '7' }, t)),
    );
    const acct = h(
      'select',
      { name: 'account', 'aria-label': 'Account' },
      h('option', { value: '' }, 'All accounts'),
      accounts.map((a) => h('option', { value: a.uuid }, a.name)),
    );
    const draw = async () =>
      renderCharts(host, await api('GET', `/charts?days=${days.value}${acct.value ? `&account=${acct.value}` : ''}`));
    days.addEventListener('change', draw);
    acct.addEventListener('change', draw);
    setTimeout(draw);
    return [h('h1', {}, 'Traffic'), h('p', { class: 'inline' }, days, ' ', acct), host];
  },
  async numbers() {
    const rows = await api('GET', '/numbers');
    return [
      h('h1', {}, 'Numbers pool'),
      h('p', { class: 'muted' }, `${rows.length} numbers free to acquire. Add more with simu numbers add.`),
      table(
        ['Number', 'Id'],
        rows.map((n) => [n.number, n.uuid]),
      ),
    ];
  },
  async trunks() {
    const rows = await api('GET', '/trunks');
    return [
      h('h1', {}, 'Trunks'),
      table(
        ['Name', 'Address', 'Health', 'Registration', 'Inbound from'],
        rows.map((t) => [
          t.name,
          `${t.transport}:${t.host}:${t.port}`,
          pill(
            `${t.health}${t.options_ping ? '' : ' (not pinged)'}`,
            t.health === 'up' ? 'ok' : t.health === 'down' ? 'bad' : '',
          ),
          t.register ? t.registration : '–',
          (t.inbound_addresses || []).join(', '),
        ]),
      ),
    ];
  },
  async rates() {
    const rows = await api('GET', '/rates');
    return [
      h('h1', {}, 'Rates'),
      table(
        ['Kind', 'Prefix or tier', 'Amount (KES)'],
        rows.map((r) => [r.kind, r.prefix ? `+${r.prefix}` : r.tier || 'any', r.amount]),
      ),
    ];
  },
  async destinations() {
    const rows = await api('GET', '/destinations');
    return [
      h('h1', {}, 'Destination rules'),
      rows.length
        ? table(
            ['Rule', 'Prefix', 'Account'],
            rows.map((r) => [
              pill(r.kind, r.kind === 'block' ? 'bad' : 'ok'),
              `+${r.prefix}`,
              r.account_id || 'every account',
            ]),
          )
        : h('p', { class: 'muted' }, 'No rules: every destination with a rate may be called.'),
    ];
  },
  async bans() {
    const rows = await api('GET', '/bans');
    return [
      h('h1', {}, 'SIP bans'),
      rows.length === 0
        ? h('p', { class: 'muted', id: 'no-bans' }, 'No bans in force.')
        : table(
            ['Address', 'Why', 'Until', 'Dropped', ''],
            rows.map((b) => [
              b.address,
              b.reason,
              b.expires_at,
              String(b.hits),
              act('Lift', () => api('POST', '/bans/lift', { address: b.address }).then(show), 'lift'),
            ]),
            (i) => ({ 'data-ban': rows[i].address }),
          ),
    ];
  },
  async platform() {
    const p = await api('GET', '/platform');
    return [
      h('h1', {}, 'Platform'),
      h(
        'p',
        { id: 'platform-state' },
        p.draining
          ? pill('Draining: new calls are refused (PLATFORM.0503); calls in progress go on', 'bad')
          : pill('Admitting new calls', 'ok'),
      ),
      p.draining
        ? act('Resume admitting calls', () => api('POST', '/platform/resume').then(show), 'resume')
        : act(
            'Drain: refuse new calls',
            () =>
              sure('Refuse every new call on the platform? Calls in progress go on.') &&
              api('POST', '/platform/drain').then(show),
            'danger drain',
          ),
    ];
  },
  async audit() {
    const [rows, accounts] = await Promise.all([api('GET', '/audit'), api('GET', '/accounts')]);
    const names = new Map(accounts.map((a) => [a.uuid, a.name]));
    const detail = (r) => {
      const d = JSON.parse(r.detail);
      return [d.amount_cents !== undefined && `${(d.amount_cents / 100).toFixed(2)}`, d.reason]
        .filter(Boolean)
        .join(' · ');
    };
    return [
      h('h1', {}, 'Audit log'),
      h('p', { class: 'muted' }, 'Every operator action, from this console and from the command line.'),
      table(
        ['When (UTC)', 'Who', 'What', 'On', 'Detail', 'Outcome'],
        rows.map((r) => [
          r.at.replace('T', ' ').slice(0, 19),
          r.actor,
          r.action,
          names.has(r.target)
            ? h('span', {}, names.get(r.target), h('br'), h('small', { class: 'muted' }, r.target))
            : r.target,
          detail(r),
          r.ok ? pill('done', 'ok') : pill(`refused: ${JSON.parse(r.detail).error || ''}`, 'bad'),
        ]),
        (i) => ({ 'data-action': rows[i].action }),
      ),
    ];
  },
};

async function show() {
  clearTimeout(timer);
  const name = (location.hash.replace(/^#\//, '') || 'live').split('?')[0];
  const render = pages[name] || pages.live;
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('on', a.getAttribute('href') === `#/${name}`);
  try {
    const kids = await render();
    page.replaceChildren(...kids);
    page.dataset.page = name;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return signedOut();
    page.replaceChildren(h('p', { class: 'error' }, e.message));
  }
  if (name === 'live') timer = setTimeout(show, 1000);
}

function signedOut() {
  clearTimeout(timer);
  $('#nav').hidden = true;
  page.hidden = true;
  $('#signout').hidden = true;
  $('#me').textContent = '';
  $('#signin-form').hidden = false;
}

function signedIn(me) {
  $('#signin-form').hidden = true;
  $('#nav').hidden = false;
  page.hidden = false;
  $('#signout').hidden = false;
  $('#me').textContent = me.email;
  $('#me').title = me.email;
  void show();
}

$('#signin-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  $('#signin-error').textContent = '';
  try {
    signedIn(await api('POST', '/signin', Object.fromEntries(new FormData(e.target))));
  } catch (err) {
    $('#signin-error').textContent = err.message;
  }
});
$('#signout').addEventListener('click', async () => {
  await api('POST', '/signout').catch(() => undefined);
  signedOut();
});
window.addEventListener('hashchange', () => void show());
api('GET', '/me').then(signedIn, signedOut);
