/**
 * The UDP front's worker thread (udp-front.ts starts it): it receives every datagram of the SIP UDP port, so new
 * INVITEs are refused while the event loop of the main thread is busy. Plain JavaScript: worker threads do not get
 * the TypeScript loader of the main thread.
 *
 * Per datagram it reads only the start line; of an INVITE (and of an ACK or CANCEL while refusals are remembered) a few
 * headers: Via, From, To, Call-ID, CSeq, the Request-URI's user, User-Agent. A new INVITE (no To tag, not exempt by
 * the policy) meets the policy the switch passed (a module: createPolicy(data)) and the gate the main thread
 * publishes in shared memory (a token bucket's rate); a refused one is answered here, statelessly (RFC 3261 §8.2.6, §16.6 step 8's reply shape), with
 * 503 and Retry-After. Its retransmissions get the same reply, byte for byte, the ACK of that reply is absorbed and a
 * CANCEL of it gets 200 (§9.2: the transaction has its final response).
 * Everything else goes to the main thread, as it came, with the source address; so do the INVITEs admitted here
 * (flagged, so the main thread does not ask its own gate again) and, every 100 ms, the refusals by source (flood
 * accounting).
 *
 * The worker owns the port's only socket: the main thread's datagrams are sent from it too (sendBatch), so the port
 * is bound exclusively, as it is without the front.
 *
 * The gate also refuses a new INVITE while a batch of datagrams handed to the main thread more than the published
 * backlog limit ago is still untaken: that thread's event loop is so far behind that a call let in now would wait it
 * out, and its own controller (overload/overload-control.ts) sees it only later. At the onset of a flood this is what keeps
 * the calls already admitted moving.
 *
 * The shared gate, an Int32Array: [0] limit in milli-calls/s (-1 = none), [1] Retry-After seconds, [2] the bucket's
 * floor (minCps), [3] refusals so far (written here), [4] the backlog limit in ms (0 = none), [5] the number of the
 * last batch the main thread has taken (written there).
 */
import dgram from 'node:dgram';
import { parentPort, workerData } from 'node:worker_threads';

const GATE_LIMIT = 0;
const GATE_RETRY_AFTER = 1;
const GATE_MIN_CPS = 2;
const GATE_REFUSED = 3;
const GATE_MAX_BACKLOG = 4;
const GATE_TAKEN = 5;
/** The header section read of an INVITE; a larger one goes to the main thread, which applies its own limits. */
const MAX_HEAD = 16 * 1024;
/** Transactions remembered (decision by Call-ID, CSeq number and From tag) for 64*T1 to twice that. */
const REMEMBER_MS = 32_000;
const REMEMBER_MAX = 100_000;

const { host, port, ipv6, policyModule, policyData, tokenBucketModule } = workerData;
// The kit's token bucket, by the URL the main thread passes (kit/index.ts exports it): the same module as its own.
const { TokenBucket } = await import(tokenBucketModule);
/** The switch's rules for new INVITEs (udp-front.ts, NewInvitePolicy); without one, none is exempt or capped. */
const policy = policyModule
  ? (await import(policyModule)).createPolicy(policyData)
  : { exempt: () => false, admit: () => true, admitted: () => {} };
const gate = new Int32Array(workerData.gate);
let banned = new Set();
const tagSalt = Math.floor(Math.random() * 0xffffff).toString(36);

/**
 * Decisions of recent INVITE transactions: true for a forwarded one; for a refused one the Retry-After it was given
 * (its 503 is made again from a retransmission, which carries the same headers: the same bytes, for less memory).
 */
let current = new Map();
let previous = new Map();
let rotatedAt = performance.now();
let refusalsRemembered = 0;
const bucket = new TokenBucket({ ratePerSecond: 0, burst: 0, tokens: 0, at: performance.now() });
let lastLimit = -1;

// The port's only socket: bound exclusively (no SO_REUSEADDR), so no other process can bind it while Simu runs.
const socket = dgram.createSocket({ type: ipv6 ? 'udp6' : 'udp4' });
socket.on('message', (data, rinfo) => {
  try {
    receive(data, rinfo.address, rinfo.port);
  } catch {
    forward(data, rinfo.address, rinfo.port, 0);
  }
});
socket.once('error', (err) => parentPort.postMessage({ bindError: `${err.code ?? ''} ${err.message}`.trim() }));
socket.bind(port, host, () => {
  socket.on('error', () => {}); // per-send errors are reported with the send; ICMP errors arrive here
  try {
    socket.setRecvBufferSize(4 * 1024 * 1024);
  } catch {
    /* the kernel caps it */
  }
  const a = socket.address();
  parentPort.postMessage({ bound: { host: a.address, port: a.port } });
});
parentPort.on('message', (m) => {
  if (Array.isArray(m)) sendBatch(m);
  else if (m.banned) banned = new Set(m.banned);
  else if (m.close) socket.close(() => parentPort.close());
});

/**
 * The main thread's datagrams, sent from the port's socket: [first sequence number, then data (the bytes as a latin1
 * string), port, address per datagram]. Once every one of them is handed to the kernel, the main thread is told the last sequence number
 * and the ones that failed, with the error (it settles each send's promise).
 */
function sendBatch(m) {
  const first = m[0];
  const count = (m.length - 1) / 3;
  let left = count;
  const errors = [];
  for (let i = 0; i < count; i++) {
    const seq = first + i;
    const done = (err) => {
      if (err) errors.push(seq, err.message);
      if (--left === 0) parentPort.postMessage({ sent: first + count - 1, errors });
    };
    try {
      socket.send(Buffer.from(m[1 + i * 3], 'latin1'), m[2 + i * 3], m[3 + i * 3], done);
    } catch (err) {
      done(err); // a bad port or address: that send fails, the others go
    }
  }
}

/**
 * Datagrams for the main thread, [data, address, port, gated] after one another, handed over once per turn of this
 * thread's loop (after the datagrams the poll read together): one message for a burst instead of one each.
 */
let outbox = [];
let batches = 0;
/** Batches handed over and not yet known taken: [number, time] pairs, oldest first. */
const handed = [];
let handedHead = 0;
function forward(data, address, srcPort, gated) {
  const copy = new Uint8Array(data.length);
  copy.set(data);
  if (outbox.length === 0) {
    setImmediate(flushOutbox);
    outbox.push(++batches);
  }
  outbox.push(copy, address, srcPort, gated);
}
function flushOutbox() {
  const batch = outbox;
  outbox = [];
  handed.push(batch[0], performance.now());
  parentPort.postMessage(batch);
}

/** How long the oldest batch the main thread has not taken yet has waited, ms (0: it has taken them all). */
function backlog(now) {
  const taken = Atomics.load(gate, GATE_TAKEN);
  while (handedHead < handed.length && handed[handedHead] <= taken) handedHead += 2;
  if (handedHead > 4096) {
    handed.splice(0, handedHead);
    handedHead = 0;
  }
  return handedHead < handed.length ? now - handed[handedHead + 1] : 0;
}

function receive(data, address, srcPort) {
  // Only requests starting INVITE or ACK are looked at; a response, a keep-alive or any other method goes on.
  const c = data[0];
  const isInvite = c === 0x49 && data.length > 7 && data.toString('latin1', 0, 7) === 'INVITE ';
  const isAck = c === 0x41 && refusalsRemembered > 0 && data.length > 4 && data.toString('latin1', 0, 4) === 'ACK ';
  const isCancel =
    c === 0x43 && refusalsRemembered > 0 && data.length > 7 && data.toString('latin1', 0, 7) === 'CANCEL ';
  if (!isInvite && !isAck && !isCancel) return forward(data, address, srcPort, 0);
  const req = readRequest(data);
  if (!req) return forward(data, address, srcPort, 0);
  rotate();
  const key = `${req.callId}\n${req.cseqNum}\n${req.fromTag}`;
  const known = current.get(key) ?? previous.get(key);
  if (isAck) {
    // The ACK of a 503 sent here ends that transaction (§17.2.1); any other ACK is the main thread's.
    if (typeof known === 'number') return;
    return forward(data, address, srcPort, 0);
  }
  if (isCancel) {
    // The CANCEL of an INVITE refused here: that transaction is known and has its final response, so the CANCEL
    // gets 200 and changes nothing (§9.2); any other CANCEL is the main thread's.
    if (typeof known === 'number' && req.cseqMethod === 'CANCEL')
      return send(response(req, address, srcPort, key, '200 OK', []), req, address, srcPort);
    return forward(data, address, srcPort, 0);
  }
  // A retransmission: the same answer.
  if (typeof known === 'number') return send(refusal(req, address, srcPort, key, known), req, address, srcPort);
  if (known === true || req.toTag || req.cseqMethod !== 'INVITE' || policy.exempt(req.user))
    return forward(data, address, srcPort, known === true ? 1 : 0);
  if (banned.has(address)) return forward(data, address, srcPort, 0); // the main thread drops it unanswered
  if (admit()) {
    remember(key, true);
    return forward(data, address, srcPort, 1);
  }
  Atomics.add(gate, GATE_REFUSED, 1);
  const retryAfter = Atomics.load(gate, GATE_RETRY_AFTER);
  remember(key, retryAfter);
  refusalsRemembered++;
  send(refusal(req, address, srcPort, key, retryAfter), req, address, srcPort);
  note(address, req.userAgent);
}

/** Refusals by source, told to the main thread every 100 ms at most (one message, however many). */
let notes = new Map();
let noting = false;
function note(address, userAgent) {
  const n = notes.get(address);
  if (n) n.count++;
  else if (notes.size < 10_000) notes.set(address, { count: 1, userAgent });
  if (noting) return;
  noting = true;
  setTimeout(() => {
    noting = false;
    parentPort.postMessage({ refused: [...notes].map(([a, v]) => [a, v.count, v.userAgent]) });
    notes = new Map();
  }, 100);
}

/** The gate: the policy, the main thread's backlog, then the token bucket at the published limit. */
function admit() {
  const now = performance.now();
  if (!policy.admit(now)) return false;
  const maxBacklog = Atomics.load(gate, GATE_MAX_BACKLOG);
  if (maxBacklog > 0 && backlog(now) > maxBacklog) return false;
  const limitMilli = Atomics.load(gate, GATE_LIMIT);
  if (limitMilli >= 0) {
    const limit = limitMilli / 1000;
    // A limit just set, or lowered by more than a twentieth (a cut; the completion bound moves by a little with each
    // completion): the bucket keeps at most one token, as the main thread's does.
    if (lastLimit < 0 || limit < 0.95 * lastLimit) bucket.keepAtMost(1);
    bucket.configure(limit, Math.max(Atomics.load(gate, GATE_MIN_CPS), limit / 4));
    lastLimit = limit;
    if (!bucket.take(now)) return false;
  } else {
    lastLimit = -1;
    bucket.at = now;
  }
  policy.admitted(now);
  return true;
}

function remember(key, decision) {
  if (current.size >= REMEMBER_MAX) rotate(true);
  current.set(key, decision);
}

function rotate(now = false) {
  const t = performance.now();
  if (!now && t - rotatedAt < REMEMBER_MS) return;
  previous = current;
  current = new Map();
  rotatedAt = t;
  refusalsRemembered = 0;
  for (const v of previous.values()) if (typeof v === 'number') refusalsRemembered++;
}

/** §18.2.2 as the main thread does it: to the source address, at the rport if asked for, else the Via's port. */
function send(reply, req, address, srcPort) {
  socket.send(reply, req.rport ? srcPort : req.viaPort, address);
}

/**
 * The stateless 503 (§8.2.6): Via (the top one stamped with received/rport, §18.2.1), From, To with a tag (the same
 * for every retransmission, from the transaction's key), Call-ID and CSeq copied; Retry-After; no body.
 */
function refusal(req, address, srcPort, key, retryAfter) {
  return response(req, address, srcPort, key, '503 Service Unavailable', [`Retry-After: ${retryAfter}`]);
}

/** A stateless response to `req` of the refused transaction `key` (its To tag is the 503's). */
function response(req, address, srcPort, key, status, extra) {
  const vias = req.vias.slice();
  vias[0] = stampVia(vias[0], req, address, srcPort);
  const lines = [
    `SIP/2.0 ${status}`,
    ...vias.map((v) => `Via: ${v}`),
    `From: ${req.from}`,
    `To: ${req.to};tag=${tagSalt}${hash(key)}`,
    `Call-ID: ${req.callId}`,
    `CSeq: ${req.cseq}`,
    ...extra,
    'Content-Length: 0',
    '',
    '',
  ];
  return Buffer.from(lines.join('\r\n'), 'latin1');
}

function stampVia(value, req, address, srcPort) {
  const comma = value.indexOf(',');
  let top = comma < 0 ? value : value.slice(0, comma);
  const rest = comma < 0 ? '' : value.slice(comma);
  if (req.rport) top = top.replace(/;\s*rport(?=\s*(;|$))/i, `;rport=${srcPort}`);
  if (req.viaHost !== address && !/;\s*received\s*=/i.test(top)) top += `;received=${address}`;
  return top + rest;
}

function hash(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(36);
}

const COMPACT = { v: 'via', f: 'from', t: 'to', i: 'call-id' };

/** The few headers of a request the front needs, or undefined when any is missing or unreadable. */
function readRequest(data) {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0 || end > MAX_HEAD) return undefined;
  const lines = data.toString('latin1', 0, end).split('\r\n');
  const uri = lines[0].split(' ')[1] ?? '';
  const vias = [];
  const h = {};
  for (let i = 1; i < lines.length; i++) {
    let line = lines[i];
    while (i + 1 < lines.length && (lines[i + 1][0] === ' ' || lines[i + 1][0] === '\t'))
      line += ' ' + lines[++i].trim();
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    let name = line.slice(0, colon).trim().toLowerCase();
    name = COMPACT[name] ?? name;
    const value = line.slice(colon + 1).trim();
    if (name === 'via') vias.push(value);
    else if (name === 'from' || name === 'to' || name === 'call-id' || name === 'cseq' || name === 'user-agent') {
      if (h[name] !== undefined) return undefined; // a repeated single header: the main thread's parser decides
      h[name] = value;
    }
  }
  const cseq = /^(\d{1,10})\s+([A-Za-z]+)$/.exec(h.cseq ?? '');
  const via = /^SIP\s*\/\s*2\.0\s*\/\s*UDP\s+(\[[^\]]+\]|[^\s;:,]+)(?::(\d{1,5}))?/i.exec(vias[0] ?? '');
  if (!h.from || !h.to || !h['call-id'] || !cseq || !via) return undefined;
  const user = /^sips?:([^@;?]*)@/i.exec(uri);
  const topVia = vias[0].split(',')[0];
  return {
    vias,
    from: h.from,
    to: h.to,
    callId: h['call-id'],
    cseq: h.cseq,
    cseqNum: cseq[1],
    cseqMethod: cseq[2].toUpperCase(),
    fromTag: tagOf(h.from) ?? '',
    toTag: tagOf(h.to),
    user: user ? user[1] : '',
    userAgent: h['user-agent']?.slice(0, 256),
    viaHost: via[1].replace(/^\[|\]$/g, ''),
    viaPort: via[2] ? Number(via[2]) : 5060,
    rport: /;\s*rport(?=\s*[;=,]|\s*$)/i.test(topVia),
  };
}

/** The tag parameter of a From or To value (its parameters follow the `>` of a name-addr, else the URI). */
function tagOf(value) {
  const gt = value.lastIndexOf('>');
  const params = gt >= 0 ? value.slice(gt + 1) : value;
  const m = /;\s*tag\s*=\s*([^;\s,]+)/i.exec(params);
  return m ? m[1] : undefined;
}
