/* global atob, EventTarget, CustomEvent, AudioContext, FormData */
// Simu browser softphone: SIP over WebSocket (RFC 7118) with WebRTC media, on SIP.js (npm `sip.js`, served by the
// switch from its node_modules as native ES modules). This file only adapts SIP.js to the phone-token mint
// response and draws the UI; transactions, dialogs, registration refresh and media are the library's.
// It takes exactly the mint response's `token` and `iceServers`. Every REGISTER and INVITE carries
// `Authorization: Bearer <token>` (RFC 8898), so there is no digest round; a digest challenge is still answered,
// with the extension as username and the token as password.
import { Inviter, Registerer, RegistererState, SessionState, UserAgent } from './vendor/sip.js/index.js';

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

/** Audio only; SIP carries one complete SDP (no trickle ICE), gathered for at most 3 s. */
const MEDIA = { constraints: { audio: true, video: false } };

/**
 * One registered phone. Events (EventTarget): `state` (detail: registration state), `call` (detail: the Call),
 * `incoming` (detail: the Call, which has answer() and reject()).
 */
export class Softphone extends EventTarget {
  constructor({ token, iceServers, server, expires = 600 }) {
    super();
    if (!token || !server) throw new Error('Softphone needs the mint response token and a wss:// server');
    this.token = token;
    this.server = server;
    const claims = decodeJwtPayload(token);
    this.extension = String(claims.ext);
    // The account uuid as the domain's first label (docs/softphones.md), under a name that needs no DNS.
    this.domain = `${claims.acc}.simu.invalid`;
    this.aor = `sip:${this.extension}@${this.domain}`;
    this.registration = 'unregistered';
    this.calls = new Set();
    this.bearer = [`Authorization: Bearer ${token}`];
    const debug = Boolean(globalThis.SIMU_SIP_DEBUG);
    this.ua = new UserAgent({
      uri: UserAgent.makeURI(this.aor),
      transportOptions: { server, traceSip: debug },
      authorizationUsername: this.extension,
      authorizationPassword: token,
      contactName: this.extension,
      // The switch matches the Contact's transport parameter against the flow's (WS or WSS) to route in-dialog
      // requests back over this connection, so a WSS phone says `wss` (RFC 7118 section 5.2 names only `ws`).
      contactParams: { transport: server.startsWith('wss:') ? 'wss' : 'ws' },
      userAgentString: 'simu-softphone (SIP.js)',
      logBuiltinEnabled: debug,
      logLevel: debug ? 'debug' : 'error',
      sessionDescriptionHandlerFactoryOptions: {
        peerConnectionConfiguration: { iceServers: iceServers ?? [] },
        iceGatheringTimeout: 3000,
      },
      delegate: {
        onInvite: (invitation) => this.#incoming(invitation),
        onDisconnect: () => {
          this.#setState('disconnected');
          for (const c of this.calls) c.end('transport closed');
        },
      },
    });
    this.registerer = new Registerer(this.ua, { expires, extraHeaders: this.bearer });
    this.registerer.stateChange.addListener((s) => {
      if (s === RegistererState.Registered) this.#setState('registered');
      if (s === RegistererState.Unregistered && this.registration !== 'connecting') this.#setState('unregistered');
    });
  }

  #setState(s) {
    this.registration = s;
    this.dispatchEvent(new CustomEvent('state', { detail: s }));
  }

  /** Opens the WebSocket (subprotocol `sip`) and registers; rejects when either fails. */
  async start() {
    this.#setState('connecting');
    await this.ua.start().catch(() => {
      throw new Error(`cannot open ${this.server}`);
    });
    this.#setState('registering');
    await new Promise((resolve, reject) => {
      const done = (s) => s === RegistererState.Registered && resolve();
      this.registerer.stateChange.addListener(done);
      this.registerer
        .register({
          requestDelegate: {
            onReject: ({ message }) => {
              this.#setState(`failed (${message.statusCode} ${message.reasonPhrase})`);
              reject(new Error(`REGISTER refused: ${message.statusCode} ${message.reasonPhrase}`));
            },
          },
        })
        .catch(reject);
    });
  }

  /** Places a call to `target` (an extension or E.164 number). */
  async call(target) {
    const uri = UserAgent.makeURI(`sip:${target}@${this.domain}`);
    if (!uri) throw new Error(`not a number or extension: ${target}`);
    const inviter = new Inviter(this.ua, uri, { extraHeaders: this.bearer, sessionDescriptionHandlerOptions: MEDIA });
    const call = new Call(this, inviter, 'outgoing', String(target));
    this.dispatchEvent(new CustomEvent('call', { detail: call }));
    inviter
      .invite({
        requestDelegate: {
          onProgress: ({ message }) => message.statusCode >= 180 && call.ringing(),
          onReject: ({ message }) => call.end(`${message.statusCode} ${message.reasonPhrase}`),
        },
      })
      .catch((e) => call.end(e.message));
    return call;
  }

  #incoming(invitation) {
    const call = new Call(this, invitation, 'incoming', invitation.remoteIdentity.uri.toString());
    invitation.progress().catch(() => {}); // 180 Ringing
    this.dispatchEvent(new CustomEvent('incoming', { detail: call }));
    this.dispatchEvent(new CustomEvent('call', { detail: call }));
  }

  /** Hangs up every call, unregisters and closes the WebSocket. */
  async stop() {
    for (const c of this.calls) await c.hangup().catch(() => {});
    if (this.registration === 'registered') await this.registerer.unregister().catch(() => {});
    await this.ua.stop().catch(() => {});
  }
}

/**
 * One call: a SIP.js session (Inviter or Invitation) and its peer connection. `state` is calling, ringing,
 * answering, connected or ended (`reason` says why). Events: `state` (detail: the new state).
 */
export class Call extends EventTarget {
  constructor(phone, session, direction, peer) {
    super();
    this.phone = phone;
    this.session = session;
    this.direction = direction;
    this.peer = peer;
    this.state = direction === 'incoming' ? 'ringing' : 'calling';
    phone.calls.add(this);
    session.stateChange.addListener((s) => {
      if (s === SessionState.Established) this.#set('connected');
      if (s === SessionState.Terminated)
        this.end(this.state === 'ringing' && direction === 'incoming' ? 'cancelled' : 'remote hangup');
    });
  }

  /** The remote audio (tracks arrive once the answer is applied). */
  get remoteStream() {
    return this.session.sessionDescriptionHandler?.remoteMediaStream;
  }

  #set(state) {
    if (this.state === 'ended') return;
    this.state = state;
    this.dispatchEvent(new CustomEvent('state', { detail: state }));
  }

  ringing() {
    if (this.state === 'calling') this.#set('ringing');
  }

  /**
   * Sends keys (0-9 * #) as RFC 4733 events on the audio track (the browser's RTCDTMFSender): IVRs read them,
   * e.g. Record's finishOnKey. False when the call is not connected or the browser cannot send them.
   */
  sendDigits(keys) {
    if (this.state !== 'connected') return false;
    return this.session.sessionDescriptionHandler.sendDtmf(String(keys), { duration: 120, interToneGap: 80 });
  }

  async answer() {
    if (this.direction !== 'incoming' || this.state !== 'ringing') return;
    this.#set('answering');
    await this.session.accept({ sessionDescriptionHandlerOptions: MEDIA }).catch((e) => this.end(e.message));
  }

  reject() {
    if (this.direction !== 'incoming' || this.state !== 'ringing') return;
    this.end('rejected');
    this.session.reject({ statusCode: 486 }).catch(() => {});
  }

  async hangup() {
    if (this.state === 'ended') return;
    const s = this.session;
    if (this.direction === 'incoming' && this.state === 'ringing') return this.reject();
    this.end('local hangup');
    if (s.state === SessionState.Established) await s.bye();
    else if (this.direction === 'outgoing' && s.state !== SessionState.Terminated) await s.cancel();
  }

  end(reason) {
    if (this.state === 'ended') return;
    this.reason = reason;
    this.phone.calls.delete(this);
    this.#set('ended');
  }
}

/**
 * A small phone UI inside `el`: registration state, a dial box, call state, answer/hang-up buttons, a keypad
 * (RFC 4733 digits) during a call, and a level meter of the remote audio (WebAudio AnalyserNode).
 * Returns { phone, ready, level(), peak(), current(), close() }.
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
    if (to) phone.call(String(to)).catch((e) => (q('[data-call]').textContent = e.message));
  });
  q('[data-answer]').onclick = () => current?.answer();
  q('[data-hangup]').onclick = () => current?.hangup();
  for (const b of el.querySelectorAll('[data-key]')) b.onclick = () => current?.sendDigits(b.dataset.key);
  const ready = phone.start().catch((e) => (q('[data-reg]').textContent = e.message));
  return { phone, ready, level, peak: () => peak, current: () => current, close: () => phone.stop() };
}
