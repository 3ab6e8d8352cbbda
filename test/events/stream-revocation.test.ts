import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import {
  attachStream,
  CLOSE_POLICY_VIOLATION,
  CLOSE_REASON_ACCOUNT_SUSPENDED,
  CLOSE_REASON_KEY_REVOKED,
  EventBus,
  type StreamServer,
} from '../../events/index.js';
import { consumeStreamToken, insertApiKey, lapsedStreamPrincipals, onAuthWrite } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from '../api/harness.js';
import { quiet } from './setup.js';

interface Socket {
  ws: WebSocket;
  /** Resolves with the close code and reason, and the milliseconds since `since` was last set. */
  closed: Promise<{ code: number; reason: string; at: number }>;
}

/**
 * Issue 22, item 15: a stream socket lives no longer than its API key and its account. A revocation through this
 * process closes it at once; a suspension written by another process (the CLI) within one re-check interval.
 */
describe('events: stream sockets close when their key is revoked or their account suspended', function () {
  this.timeout(30_000);
  let h: ApiHarness;
  let stream: StreamServer;
  let t: Tenant;
  let other: Tenant;
  const sockets: WebSocket[] = [];

  async function start(recheckIntervalMs: number) {
    h = await ApiHarness.start(sqliteDb);
    stream = attachStream(h.server, {
      bus: new EventBus(quiet),
      consumeToken: (tok) => consumeStreamToken(h.db, tok),
      lapsed: (accounts, keys) => lapsedStreamPrincipals(h.db, accounts, keys),
      onAuthChange: onAuthWrite,
      recheckIntervalMs,
      logger: quiet,
    });
    t = await h.tenant('Streamer', 0);
    other = await h.tenant('Bystander', 0);
  }
  afterEach(async () => {
    for (const ws of sockets.splice(0)) ws.terminate();
    await stream?.close();
    await h?.stop();
  });

  /** A stream token through the REST API with `key`, then a real socket with it. */
  async function open(key: string): Promise<Socket> {
    const r = await h.req('POST', '/api/stream/token', { key });
    assert.equal(r.status, 200, r.text);
    const ws = new WebSocket(`${h.base.replace('http', 'ws')}/api/stream?token=${encodeURIComponent(r.body.token)}`);
    sockets.push(ws);
    const closed = new Promise<{ code: number; reason: string; at: number }>((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: String(reason), at: Date.now() })),
    );
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) =>
        reject(Object.assign(new Error('refused'), { status: res.statusCode })),
      );
      ws.once('error', reject);
    });
    return { ws, closed };
  }
  const stillOpen = async (s: Socket) => {
    // A ping answered proves the server still serves the socket.
    await new Promise<void>((resolve, reject) => {
      s.ws.once('pong', () => resolve());
      s.ws.ping();
      setTimeout(() => reject(new Error('no pong')), 2000).unref();
    });
    assert.equal(s.ws.readyState, WebSocket.OPEN);
  };

  it('revoking a key through the API closes its sockets at once (1008, "api key revoked"), not the others', async () => {
    await start(60_000); // the periodic re-check cannot be what closes it here
    const { key: second, row } = await insertApiKey(h.db, t.accountId, 'second');
    const doomed = await open(second);
    const sibling = await open(t.key);
    const neighbour = await open(other.key);
    assert.equal(stream.clientCount, 3);
    const at = Date.now();
    const r = await h.req('POST', '/api/keys/revoke', { key: t.key, body: { uuid: row.id } });
    assert.equal(r.status, 200, r.text);
    const c = await doomed.closed;
    assert.equal(c.code, CLOSE_POLICY_VIOLATION);
    assert.equal(c.reason, CLOSE_REASON_KEY_REVOKED);
    assert.ok(c.at - at < 1000, `closed ${c.at - at} ms after the revocation`);
    await stillOpen(sibling);
    await stillOpen(neighbour);
    assert.equal(stream.clientCount, 2);
  });

  it('a suspension written by another process (no in-process signal) closes the sockets within the re-check', async () => {
    await start(300);
    const a = await open(t.key);
    const { key: second } = await insertApiKey(h.db, t.accountId, 'second');
    const b = await open(second);
    const neighbour = await open(other.key);
    const at = Date.now();
    // What `simu account suspend` does, from here: a plain row update, which no listener in this process hears.
    await h.db('accounts').where({ id: t.accountId }).update({ status: 'suspended' });
    for (const s of [a, b]) {
      const c = await s.closed;
      assert.equal(c.code, CLOSE_POLICY_VIOLATION);
      assert.equal(c.reason, CLOSE_REASON_ACCOUNT_SUSPENDED);
      assert.ok(c.at - at < 2000, `closed ${c.at - at} ms after the suspension`);
    }
    await stillOpen(neighbour);
  });

  it('a token minted before its key was revoked opens no socket', async () => {
    await start(60_000);
    const { key: second, row } = await insertApiKey(h.db, t.accountId, 'second');
    const r = await h.req('POST', '/api/stream/token', { key: second });
    assert.equal(r.status, 200);
    await h.db('api_keys').where({ id: row.id }).update({ is_active: false }); // e.g. revoked by another node
    const ws = new WebSocket(`${h.base.replace('http', 'ws')}/api/stream?token=${encodeURIComponent(r.body.token)}`);
    sockets.push(ws);
    const status = await new Promise<number>((resolve) => {
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => resolve(101));
      ws.once('error', () => resolve(-1));
    });
    assert.equal(status, 401);
  });
});
