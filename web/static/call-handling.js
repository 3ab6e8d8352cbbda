// Per end-user call handling and voicemail in the portal (docs/api.md "Call handling and
// voicemail"): DND, forwarding, ring time, mailbox and greeting, saved through POST /api/users/update, and the
// end-user's voicemail messages (GET /api/recordings?end_user_uuid=) with a download link.

import { esc } from './ui-kit.js';

/** A text field's value: blank clears the setting (null). */
const orNull = (v) => (String(v ?? '').trim() === '' ? null : String(v).trim());

/**
 * Fills `box` with the call-handling form of end-user `u` and its messages. `api(path, opts)` is the portal's API
 * proxy; `onSaved()` runs after a save.
 */
export async function mountCallHandling(box, u, api, onSaved) {
  const messages = await api(`/recordings?end_user_uuid=${encodeURIComponent(u.uuid)}`);
  box.innerHTML = `<h2>Call handling for extension ${esc(u.extension_number)}</h2>
    <form class="card" id="call-handling">
      <label><input type="checkbox" name="dnd" ${u.dnd ? 'checked' : ''}/> Do not disturb</label>
      <label>Forward always to <input name="forward_always" value="${esc(u.forward_always)}" placeholder="1002 or +2547..."/></label>
      <label>Forward when busy to <input name="forward_busy" value="${esc(u.forward_busy)}"/></label>
      <label>Forward when not answered to <input name="forward_no_answer" value="${esc(u.forward_no_answer)}"/></label>
      <label>Ring for (seconds) <input name="no_answer_seconds" type="number" min="5" max="120" value="${esc(u.no_answer_seconds)}"/></label>
      <label><input type="checkbox" name="voicemail_enabled" ${u.voicemail_enabled ? 'checked' : ''}/> Voicemail</label>
      <label>Greeting asset <input name="voicemail_greeting_asset" value="${esc(u.voicemail_greeting_asset)}" placeholder="spoken default"/></label>
      <button>Save</button><p class="error"></p>
    </form>
    <h3>Voicemail messages</h3>
    <table id="vm-table"><tr><th>When</th><th>Seconds</th><th>Status</th><th></th></tr>
    ${messages
      .map(
        (m) => `<tr><td>${esc(new Date(m.created_at).toLocaleString())}</td><td>${esc(m.duration_seconds)}</td>
        <td>${esc(m.voicemail_status)}</td><td><button class="secondary" data-listen="${esc(m.uuid)}">Download</button></td></tr>`,
      )
      .join('')}</table>`;
  const f = box.querySelector('#call-handling');
  f.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const out = f.querySelector('.error');
    out.textContent = '';
    const v = (name) => f.elements[name].value;
    try {
      await api('/users/update', {
        method: 'POST',
        body: {
          uuid: u.uuid,
          dnd: f.elements.dnd.checked,
          forward_always: orNull(v('forward_always')),
          forward_busy: orNull(v('forward_busy')),
          forward_no_answer: orNull(v('forward_no_answer')),
          no_answer_seconds: Number(v('no_answer_seconds')),
          voicemail_enabled: f.elements.voicemail_enabled.checked,
          voicemail_greeting_asset: orNull(v('voicemail_greeting_asset')),
        },
      });
      onSaved();
    } catch (e) {
      out.textContent = e.message;
    }
  });
  box.querySelector('#vm-table').addEventListener('click', async (ev) => {
    const b = ev.target.closest('button[data-listen]');
    if (!b) return;
    const link = await api('/recordings/download', { method: 'POST', body: { uuid: b.dataset.listen } });
    window.open(link.url, '_blank', 'noopener');
  });
}
