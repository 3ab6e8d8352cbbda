/* global crypto, atob, EventTarget, CustomEvent, TextDecoder, TextEncoder, MediaStream, RTCPeerConnection, AudioContext, FormData */
// Simu browser softphone: a minimal SIP-over-WebSocket user agent (RFC 7118) with WebRTC media.
// It takes exactly the phone-token mint response's `token` and `iceServers`. Authentication is
// `Authorization: Bearer <token>` on every request (RFC 8898), so there is no digest round.
// Media: one audio RTCPeerConnection per call; ICE candidates are gathered before the offer or answer is sent
// (SIP carries one complete SDP, no trickle), and rtpengine on the switch side does ICE and DTLS-SRTP.

const COMPACT = {
  i: 'call-id',
  m: 'contact',
  f: 'from',
  t: 'to',
  v: 'via',
  l: 'content-length',
  c: 'content-type',
  k: 'supported',
};
const rand = (n = 10) => Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => (b % 36).toString(36)).join('');

/** Parses one SIP message (a WebSocket message carries exactly one, RFC 7118 section 5.1). */
export function parseSip(text) {
  const split = text.indexOf('\r\n\r\n');
  const head = split >= 0 ? text.slice(0, split) : text;
  const body = split >= 0 ? text.slice(split + 4) : '';
  const lines = head.split('\r\n');
  const start = lines.shift();
  const headers = new Map();
  for (const line of lines) {
    if (/^[ \t]/.test(line) && headers.size) continue; // folded lines are not sent by the switch
    const i = line.indexOf(':');
    if (i < 0) continue;
    let name = line.slice(0, i).trim().toLowerCase();
    name = COMPACT[name] ?? name;
    const value = line.slice(i + 1).trim();
    if (!headers.has(name)) headers.set(name, []);
    headers.get(name).push(value);
  }
  const m = /^SIP\/2\.0 (\d{3}) ?(.*)$/.exec(start);
  if (m) return { status: Number(m[1]), reason: m[2], headers, body };
  const [method, uri] = start.split(' ');
  return { method, uri, headers, body };
}

const h1 = (msg, name) => msg.headers.get(name)?.[0] ?? '';
const tagOf = (v) => /;\s*tag=([^;>\s]+)/i.exec(v)?.[1];
const uriOf = (v) => (/<([^>]+)>/.exec(v)?.[1] ?? v.split(';')[0]).trim();

function decodeJwtPayload(token) {
  const part = token.split('.')[1];
  const json = atob(
    part
      .replace(/-/g, '+')
      .replace(/_/g, '/')
      .padEnd(Math.ceil(part.length / 4) * 4, '='),
  );
  return JSON.parse(json);
}

/**
 * One registered phone. Events (EventTarget): `state` (detail: registration state), `call` (detail: the Call),
 * `incoming` (detail: the Call, which has answer() and reject()).
 */
export class Softphone extends EventTarget {
  constructor({ token, iceServers, server, expires = 600 }) {
    super();
    if (!token || !server) throw new Error('Softphone needs the mint response token and a wss:// server');
    this.token = token;
    this.iceServers = iceServers ?? [];
    this.server = server;
    this.expires = expires;
    const claims = decodeJwtPayload(token);
    this.extension = String(claims.ext);
    // The account uuid as the domain's first label (docs/softphones.md), under a name that needs no DNS.
    this.domain = `${claims.acc}.simu.invalid`;
    this.aor = `sip:${this.extension}@${this.domain}`;
    this.viaHost = `${rand(12)}.invalid`;
    // RFC 7118 section 5.2 names only `transport=ws`; the switch's stack matches the parameter against the flow's
    // transport (WS or WSS) to route in-dialog requests back over this connection, so a WSS phone says `wss`.
    this.contact = `<sip:${this.extension}@${this.viaHost};transport=${server.startsWith('wss:') ? 'wss' : 'ws'}>`;
    this.registration = 'unregistered';
    this.calls = new Map();
    this.pending = new Map(); // branch -> { resolve, onProvisional }
    this.regCallId = rand(16);
    this.regCseq = 0;
    this.fromTag = rand(8);
  }

  get transport() {
    return this.server.startsWith('wss:') ? 'WSS' : 'WS';
  }

  #setState(s) {
    this.registration = s;
    this.dispatchEvent(new CustomEvent('state', { detail: s }));
  }

  /** Opens the WebSocket (subprotocol `sip`, RFC 7118 section 4.1) and registers. */
  async start() {
    this.#setState('connecting');
    this.ws = new WebSocket(this.server, 'sip');
    await new Promise((resolve, reject) => {
      this.ws.onopen = resolve;
      this.ws.onerror = () => reject(new Error(`cannot open ${this.server}`));
    });
    this.ws.onmessage = (ev) =>
      this.#receive(typeof ev.data === 'string' ? ev.data : new TextDecoder().decode(ev.data));
    this.ws.onclose = () => {
      clearTimeout(this.refresh);
      this.#setState('disconnected');
      for (const c of this.calls.values()) c.end('transport closed');
    };
    await this.register();
  }

  async register(expires = this.expires) {
    this.#setState(expires ? 'registering' : 'unregistering');
    const res = await this.request('REGISTER', `sip:${this.domain}`, {
      callId: this.regCallId,
      cseq: ++this.regCseq,
      fromTag: this.fromTag,
      to: `<${this.aor}>`,
      headers: { Contact: this.contact, Expires: String(expires) },
    });
    if (res.status >= 200 && res.status < 300) {
      this.#setState(expires ? 'registered' : 'unregistered');
      clearTimeout(this.refresh);
      if (expires) {
        const granted = Number(/expires=(\d+)/.exec(res.headers.get('contact')?.join(',') ?? '')?.[1] ?? expires);
        this.refresh = setTimeout(() => this.register().catch(() => {}), Math.max(30, granted / 2) * 1000);
      }
    } else {
      this.#setState(`failed (${res.status} ${res.reason})`);
      throw new Error(`REGISTER refused: ${res.status} ${res.reason}`);
    }
    return res;
  }

  /** Sends a request outside or inside a dialog; resolves with the final response. */
  request(
    method,
    uri,
    { callId, cseq, fromTag, to, headers = {}, body = '', onProvisional, branch = `z9hG4bK${rand(12)}` },
  ) {
    const lines = [
      `${method} ${uri} SIP/2.0`,
      `Via: SIP/2.0/${this.transport} ${this.viaHost};branch=${branch}`,
      'Max-Forwards: 70',
      `From: <${this.aor}>;tag=${fromTag}`,
      `To: ${to}`,
      `Call-ID: ${callId}`,
      `CSeq: ${cseq} ${method}`,
      `Authorization: Bearer ${this.token}`,
      'User-Agent: simu-softphone',
    ];
    for (const [k, v] of Object.entries(headers)) for (const one of [].concat(v)) lines.push(`${k}: ${one}`);
    if (body) lines.push('Content-Type: application/sdp');
    lines.push(`Content-Length: ${new TextEncoder().encode(body).length}`);
    if (globalThis.SIMU_SIP_DEBUG) console.log('sip >', lines[0]);
    this.ws.send(lines.join('\r\n') + '\r\n\r\n' + body);
    if (method === 'ACK') return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(branch);
        reject(new Error(`${method} timed out`));
      }, 32_000); // Timer B / F (RFC 3261 section 17.1)
      this.pending.set(branch, {
        onProvisional,
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
      });
    });
  }

  /** Answers a request: Via, From, To (with our tag), Call-ID and CSeq copied (RFC 3261 section 8.2.6.2). */
  respond(req, status, reason, { toTag, headers = {}, body = '' } = {}) {
    const to = h1(req, 'to');
    const lines = [`SIP/2.0 ${status} ${reason}`];
    for (const v of req.headers.get('via') ?? []) lines.push(`Via: ${v}`);
    lines.push(`From: ${h1(req, 'from')}`, `To: ${toTag && !tagOf(to) ? `${to};tag=${toTag}` : to}`);
    lines.push(`Call-ID: ${h1(req, 'call-id')}`, `CSeq: ${h1(req, 'cseq')}`, 'User-Agent: simu-softphone');
    for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
    if (body) lines.push('Content-Type: application/sdp');
    lines.push(`Content-Length: ${new TextEncoder().encode(body).length}`);
    this.ws.send(lines.join('\r\n') + '\r\n\r\n' + body);
  }

  #receive(text) {
    if (!text.trim()) return; // keep-alive
    if (globalThis.SIMU_SIP_DEBUG) console.log('sip <', text.split('\r\n')[0]);
    const msg = parseSip(text);
    if (msg.status) {
      const branch = /branch=([^;,\s]+)/.exec(h1(msg, 'via'))?.[1];
      const p = this.pending.get(branch);
      if (!p) return;
      if (msg.status < 200) return p.onProvisional?.(msg);
      this.pending.delete(branch);
      return p.resolve(msg);
    }
    const callId = h1(msg, 'call-id');
    const call = this.calls.get(callId);
    if (msg.method === 'INVITE' && !call) return this.#incoming(msg);
    if (msg.method === 'INVITE') return this.respond(msg, 491, 'Request Pending'); // no re-INVITEs yet
    if (msg.method === 'ACK') return call?.acked();
    if (msg.method === 'BYE') {
      this.respond(msg, call ? 200 : 481, call ? 'OK' : 'Call/Transaction Does Not Exist');
      return call?.end('remote hangup');
    }
    if (msg.method === 'CANCEL') {
      this.respond(msg, 200, 'OK');
      return call?.cancelled(msg);
    }
    if (msg.method === 'OPTIONS')
      return this.respond(msg, 200, 'OK', { headers: { Allow: 'INVITE, ACK, BYE, CANCEL, OPTIONS' } });
    this.respond(msg, 405, 'Method Not Allowed');
  }

  #incoming(req) {
    const call = new Call(this, { direction: 'incoming', callId: h1(req, 'call-id'), invite: req });
    this.calls.set(call.callId, call);
    this.respond(req, 180, 'Ringing', { toTag: call.localTag });
    this.dispatchEvent(new CustomEvent('incoming', { detail: call }));
    this.dispatchEvent(new CustomEvent('call', { detail: call }));
  }

  /** Places a call to `target` (an extension or E.164 number). */
  async call(target) {
    const call = new Call(this, { direction: 'outgoing', callId: rand(16), target });
    this.calls.set(call.callId, call);
    this.dispatchEvent(new CustomEvent('call', { detail: call }));
    call.dial().catch((e) => call.end(e.message));
    return call;
  }

  async stop() {
    for (const c of this.calls.values()) await c.hangup().catch(() => {});
    if (this.ws?.readyState === WebSocket.OPEN && this.registration === 'registered')
      await this.register(0).catch(() => {});
    clearTimeout(this.refresh);
    this.ws?.close();
  }
}

/** One call: its dialog and its peer connection. Events: `state` (detail: the new state). */
export class Call extends EventTarget {
  constructor(phone, { direction, callId, target, invite }) {
    super();
    this.phone = phone;
    this.direction = direction;
    this.callId = callId;
    this.invite = invite;
    this.localTag = rand(8);
    this.cseq = 1;
    this.state = direction === 'incoming' ? 'ringing' : 'calling';
    this.remoteStream = new MediaStream();
    if (direction === 'outgoing') {
      this.remoteUri = `sip:${target}@${phone.domain}`;
      this.remoteTo = `<${this.remoteUri}>`;
    } else {
      this.remoteUri = uriOf(h1(invite, 'contact'));
      this.remoteTo = h1(invite, 'from');
      this.peer = uriOf(this.remoteTo);
    }
  }

  #set(state) {
    if (this.state === 'ended') return;
    this.state = state;
    this.dispatchEvent(new CustomEvent('state', { detail: state }));
  }

  async #media() {
    this.pc = new RTCPeerConnection({ iceServers: this.phone.iceServers });
    this.pc.ontrack = (ev) => this.remoteStream.addTrack(ev.track);
    this.local = await navigator.mediaDevices.getUserMedia({ audio: true, video: false });
    for (const t of this.local.getTracks()) this.pc.addTrack(t, this.local);
  }

  /** Waits for ICE gathering (bounded: host candidates arrive at once, STUN/TURN within a second or two). */
  async #gathered() {
    if (this.pc.iceGatheringState === 'complete') return this.pc.localDescription.sdp;
    await new Promise((resolve) => {
      const t = setTimeout(resolve, 3000);
      this.pc.addEventListener('icegatheringstatechange', () => {
        if (this.pc.iceGatheringState === 'complete') {
          clearTimeout(t);
          resolve();
        }
      });
    });
    return this.pc.localDescription.sdp;
  }

  /**
   * Sends keys (0-9 * #) as RFC 4733 events on the audio track (the browser's RTCDTMFSender): IVRs read them,
   * e.g. Record's finishOnKey. False when the call is not connected or telephone-event was not negotiated.
   */
  sendDigits(keys) {
    const dtmf = this.pc?.getSenders().find((s) => s.track?.kind === 'audio')?.dtmf;
    if (this.state !== 'connected' || !dtmf?.canInsertDTMF) return false;
    dtmf.insertDTMF(String(keys), 120, 80);
    return true;
  }

  async dial() {
    await this.#media();
    await this.pc.setLocalDescription(await this.pc.createOffer());
    const sdp = await this.#gathered();
    this.inviteBranch = `z9hG4bK${rand(12)}`;
    const res = await this.phone.request('INVITE', this.remoteUri, {
      callId: this.callId,
      cseq: this.cseq,
      fromTag: this.localTag,
      to: this.remoteTo,
      branch: this.inviteBranch,
      headers: { Contact: this.phone.contact, Allow: 'INVITE, ACK, BYE, CANCEL, OPTIONS' },
      body: sdp,
      onProvisional: (r) => r.status >= 180 && this.#set('ringing'),
    });
    if (res.status >= 300) {
      // ACK for a non-2xx final response is part of the INVITE transaction (RFC 3261 section 17.1.1.3).
      this.#ack(res, this.inviteBranch);
      return this.end(`${res.status} ${res.reason}`);
    }
    this.remoteTo = h1(res, 'to');
    this.remoteUri = uriOf(h1(res, 'contact')) || this.remoteUri;
    this.route = (res.headers.get('record-route') ?? []).slice().reverse();
    this.#ack(res);
    await this.pc.setRemoteDescription({ type: 'answer', sdp: res.body });
    this.#set('connected');
  }

  #ack(res, branch) {
    this.phone.request('ACK', branch ? this.remoteUri : uriOf(h1(res, 'contact')) || this.remoteUri, {
      callId: this.callId,
      cseq: this.cseq,
      fromTag: this.localTag,
      to: h1(res, 'to'),
      branch,
      headers: this.route?.length ? { Route: this.route } : {},
    });
  }

  async answer() {
    if (this.direction !== 'incoming' || this.state !== 'ringing') return;
    this.#set('answering');
    await this.#media();
    await this.pc.setRemoteDescription({ type: 'offer', sdp: this.invite.body });
    await this.pc.setLocalDescription(await this.pc.createAnswer());
    const sdp = await this.#gathered();
    this.route = this.invite.headers.get('record-route') ?? [];
    this.phone.respond(this.invite, 200, 'OK', {
      toTag: this.localTag,
      headers: { Contact: this.phone.contact, ...(this.route.length && { 'Record-Route': this.route.join(', ') }) },
      body: sdp,
    });
    this.#set('connected');
  }

  reject() {
    if (this.direction === 'incoming' && this.state === 'ringing') {
      this.phone.respond(this.invite, 486, 'Busy Here', { toTag: this.localTag });
      this.end('rejected');
    }
  }

  acked() {}

  cancelled() {
    if (this.state === 'ringing') this.phone.respond(this.invite, 487, 'Request Terminated', { toTag: this.localTag });
    this.end('cancelled');
  }

  async hangup() {
    if (this.state === 'ended') return;
    if (this.state === 'connected') {
      const incoming = this.direction === 'incoming';
      // In our own dialog the From is ours; for an incoming call the remote From becomes our To.
      await this.phone
        .request('BYE', this.remoteUri, {
          callId: this.callId,
          cseq: incoming ? 1 : ++this.cseq,
          fromTag: this.localTag,
          to: this.remoteTo,
          headers: this.route?.length ? { Route: this.route } : {},
        })
        .catch(() => {});
    } else if (this.direction === 'outgoing' && this.inviteBranch) {
      await this.phone
        .request('CANCEL', this.remoteUri, {
          callId: this.callId,
          cseq: this.cseq,
          fromTag: this.localTag,
          to: this.remoteTo,
          branch: this.inviteBranch,
        })
        .catch(() => {});
    } else if (this.direction === 'incoming') {
      return this.reject();
    }
    this.end('local hangup');
  }

  end(reason) {
    if (this.state === 'ended') return;
    this.reason = reason;
    this.pc?.close();
    for (const t of this.local?.getTracks() ?? []) t.stop();
    this.phone.calls.delete(this.callId);
    this.#set('ended');
  }
}

/**
 * A small phone UI inside `el`: registration state, a dial box, call state, answer/hang-up buttons, a keypad
 * (RFC 4733 digits) during a call, and a level meter of the remote audio (WebAudio AnalyserNode).
 * Returns { phone, close(), level() }.
 */
export function mountSoftphone(el, { token, iceServers, server }) {
  el.innerHTML = `
    <div class="softphone">
      <div>Phone: <span data-reg class="badge">starting</span> <span data-ext class="mono"></span></div>
      <form data-dial class="row"><input name="to" placeholder="extension or +E.164" /><button>Call</button></form>
      <div>Call: <span data-call class="badge">idle</span> <span data-peer class="mono"></span>
        <button data-answer hidden>Answer</button><button data-hangup class="danger" hidden>Hang up</button></div>
      <div data-keypad hidden>${[...'123456789*0#'].map((k) => `<button data-key="${k}">${k}</button>`).join('')}</div>
      <div>Level: <meter data-level min="0" max="1" value="0"></meter> <span data-level-text>0.000</span></div>
      <audio data-audio autoplay></audio>
    </div>`;
  const q = (s) => el.querySelector(s);
  const phone = new Softphone({ token, iceServers, server });
  q('[data-ext]').textContent = `ext ${phone.extension}`;
  phone.addEventListener('state', (e) => (q('[data-reg]').textContent = e.detail));
  let current = null;
  let audioCtx = null;
  let analyser = null;
  let peak = 0;
  let timer = null;
  const level = () => {
    if (!analyser) return 0;
    const buf = new Float32Array(analyser.fftSize);
    analyser.getFloatTimeDomainData(buf);
    let sum = 0;
    for (const v of buf) sum += v * v;
    return Math.sqrt(sum / buf.length); // RMS of the last window, full scale = 1
  };
  const watch = (call) => {
    current = call;
    q('[data-peer]').textContent = call.peer ?? '';
    const show = () => {
      q('[data-call]').textContent = call.state + (call.reason ? ` (${call.reason})` : '');
      q('[data-answer]').hidden = !(call.direction === 'incoming' && call.state === 'ringing');
      q('[data-hangup]').hidden = call.state === 'ended';
      q('[data-keypad]').hidden = call.state !== 'connected';
      if (call.state === 'connected' && !analyser) {
        q('[data-audio]').srcObject = call.remoteStream;
        audioCtx = new AudioContext();
        const src = audioCtx.createMediaStreamSource(call.remoteStream);
        analyser = audioCtx.createAnalyser();
        analyser.fftSize = 2048;
        src.connect(analyser);
        timer = setInterval(() => {
          const l = level();
          peak = Math.max(peak, l);
          q('[data-level]').value = l;
          q('[data-level-text]').textContent = l.toFixed(3);
        }, 100);
      }
      if (call.state === 'ended') {
        clearInterval(timer);
        audioCtx?.close();
        analyser = null;
      }
    };
    call.addEventListener('state', show);
    show();
  };
  phone.addEventListener('call', (e) => watch(e.detail));
  q('[data-dial]').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const to = new FormData(ev.target).get('to');
    if (to) phone.call(String(to));
  });
  q('[data-answer]').onclick = () => current?.answer();
  q('[data-hangup]').onclick = () => current?.hangup();
  for (const b of el.querySelectorAll('[data-key]')) b.onclick = () => current?.sendDigits(b.dataset.key);
  const ready = phone.start().catch((e) => (q('[data-reg]').textContent = e.message));
  return { phone, ready, level, peak: () => peak, current: () => current, close: () => phone.stop() };
}
