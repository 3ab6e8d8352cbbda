import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import WebSocket from 'ws';
import path from 'node:path';
import type { Db } from '../../../store/index.js';
import { addOperator, addPortalUser, totp } from '../../../api/index.js';
import { shortPassword } from '../../../sip/registrar-credentials.js';
import { nextPort } from '../../support/ports.js';
import { allocateSwitchPorts, api, createAccountWithDid, runSipp } from '../support/harness.js';
import {
  freshPostgresStore,
  killSwitch,
  processEnv,
  startSwitch,
  type SwitchProcess,
} from '../support/switch-process.js';

/** A call nobody has: its update is a 404, an outcome the key replays (spec, Idempotency). */
const NO_SUCH_CALL = '0190a3c4-0000-7000-8000-000000000001';
const REGISTER = path.resolve(import.meta.dirname, '..', '..', 'sip', 'registrar-scenarios', 'register-digest.xml');

/**
 * Nodes on one PostgreSQL share what a browser or a client holds: a portal session and a console session made on
 * one node work on the others (and survive another node starting), an Idempotency-Key used on one replays on
 * another, a stream token minted on one is spent on another, and a phone token revoked through one node is refused
 * by another that had remembered it.
 */
describe('e2e: sessions, idempotency keys and phone-token revocations across nodes', function () {
  this.timeout(120000);
  const DID = '+254711500003';
  const nodes: Array<{ id: string; ports: ReturnType<typeof allocateSwitchPorts>; sw?: SwitchProcess }> = [
    { id: 'share-a', ports: allocateSwitchPorts() },
    { id: 'share-b', ports: allocateSwitchPorts() },
    { id: 'share-c', ports: allocateSwitchPorts() },
  ];
  let url: string;
  let db: Db;

  const start = async (n: (typeof nodes)[number]) => {
    const env = processEnv(n.ports, { SIMU_DATABASE_URL: url, SIMU_NODE_ID: n.id });
    // Each node's data directory holds a server secret of its own; the store's (the first node's) is used by all.
    n.sw = await startSwitch(env);
  };
  const base = (n: (typeof nodes)[number]) => `http://127.0.0.1:${n.ports.http}`;

  const send = async (
    n: (typeof nodes)[number],
    method: string,
    p: string,
    o: { cookie?: string; header?: string; body?: unknown } = {},
  ) => {
    const res = await fetch(`${base(n)}${p}`, {
      method,
      headers: {
        ...(o.cookie && { cookie: o.cookie }),
        ...(o.header && { [o.header]: '1' }),
        ...(o.body !== undefined && { 'content-type': 'application/json' }),
      },
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
    });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body, cookie: (res.headers.get('set-cookie') ?? '').split(';')[0]! };
  };

  before(async () => {
    ({ url, db } = await freshPostgresStore('simu_share'));
  });

  after(async () => {
    for (const n of nodes) await killSwitch(n.sw, n.ports.ng);
    await db?.destroy();
  });

  it('a portal session made on node A works on B, still after node C starts, and signing out on C ends it', async () => {
    const [a, b, c] = nodes as [(typeof nodes)[number], (typeof nodes)[number], (typeof nodes)[number]];
    await start(a);
    await start(b);
    const acct = await createAccountWithDid(db, DID);
    const password = 'correct horse battery';
    const user = await addPortalUser(db, acct.id, 'share@example.com', password);
    const signIn = await send(a, 'POST', '/portal/api/signin', {
      body: { email: 'share@example.com', password, code: totp(user.totp_secret, Date.now()) },
    });
    assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
    const cookie = signIn.cookie;
    assert.match(cookie, /^simu_portal=/);

    const me = await send(b, 'GET', '/portal/api/me', { cookie });
    assert.equal(me.status, 200, JSON.stringify(me.body));
    assert.equal(me.body.account, acct.id);
    const proxied = await send(b, 'GET', '/portal/proxy/api/account', { cookie, header: 'x-simu-portal' });
    assert.equal(proxied.status, 200, JSON.stringify(proxied.body));

    await start(c);
    for (const n of [a, b, c]) {
      const r = await send(n, 'GET', '/portal/proxy/api/account', { cookie, header: 'x-simu-portal' });
      assert.equal(r.status, 200, `${n.id}: ${JSON.stringify(r.body)}`);
    }
    const out = await send(c, 'POST', '/portal/api/signout', { cookie, header: 'x-simu-portal' });
    assert.equal(out.status, 200, JSON.stringify(out.body));
    assert.equal((await send(a, 'GET', '/portal/api/me', { cookie })).status, 401);
    // The session's key is revoked: the API refuses it within its cache's second.
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal((await send(a, 'GET', '/portal/proxy/api/account', { cookie, header: 'x-simu-portal' })).status, 401);
    assert.equal(
      (await db('api_keys').where({ account_id: acct.id, name: 'portal-session', is_active: true })).length,
      0,
    );
  });

  it('a console session made on node A works on B', async () => {
    const [a, b] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
    const password = 'operator password';
    const op = await addOperator(db, 'ops@example.com', password);
    const signIn = await send(a, 'POST', '/console/api/signin', {
      body: { email: 'ops@example.com', password, code: totp(op.totp_secret, Date.now()) },
    });
    assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
    const me = await send(b, 'GET', '/console/api/me', { cookie: signIn.cookie });
    assert.equal(me.status, 200, JSON.stringify(me.body));
    assert.equal(me.body.email, 'ops@example.com');
    const out = await send(b, 'POST', '/console/api/signout', { cookie: signIn.cookie, header: 'x-simu-console' });
    assert.equal(out.status, 200);
    assert.equal((await send(a, 'GET', '/console/api/me', { cookie: signIn.cookie })).status, 401);
  });

  it('an Idempotency-Key used on node A replays on node B', async () => {
    const [a, b] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
    const { key } = await createAccountWithDid(db, '+254711500004');
    const request = (n: (typeof nodes)[number]) =>
      fetch(`${base(n)}/api/calls/${NO_SUCH_CALL}/update`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'k-1' },
        body: JSON.stringify({ twiml: '<Response><Hangup/></Response>' }),
      });
    const first = await request(a);
    assert.equal(first.status, 404, await first.text());
    const again = await request(b);
    assert.equal(again.status, 404);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
  });

  it('a stream token minted on node A opens a stream socket on node B, once', async () => {
    const [a, b] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
    const { key } = await createAccountWithDid(db, '+254711500007');
    const token = await api(base(a), key, 'POST', '/api/stream/token');
    assert.equal(token.status, 200, JSON.stringify(token.body));
    const open = (n: (typeof nodes)[number]) =>
      new Promise<boolean>((resolve) => {
        const ws = new WebSocket(`ws://127.0.0.1:${n.ports.http}/api/stream?token=${token.body.token}`);
        ws.once('open', () => (ws.terminate(), resolve(true)));
        ws.once('error', () => resolve(false));
      });
    assert.equal(await open(b), true, 'node B honours the token');
    assert.equal(await open(a), false, 'spent: refused on node A too');
  });

  it('a phone token revoked through node A is refused by node B, which had remembered it', async () => {
    const [a, b] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
    const acct = await createAccountWithDid(db, '+254711500005');
    const u = await api(base(a), acct.key, 'POST', '/api/users/create', { email: 'phone@example.com' });
    assert.equal(u.status, 201, JSON.stringify(u.body));
    const minted = await api(base(a), acct.key, 'POST', '/api/phone-tokens/mint', { uuid: u.body.uuid });
    assert.equal(minted.status, 200, JSON.stringify(minted.body));
    const register = async () => {
      const port = nextPort();
      const log = path.join(mkdtempSync(path.join(os.tmpdir(), 'simu-share-')), 'messages.log');
      const run = runSipp(
        [
          `127.0.0.1:${b.ports.sip}`,
          '-sf',
          REGISTER,
          '-i',
          '127.0.0.1',
          '-p',
          String(port),
          '-m',
          '1',
          '-timeout',
          '15s',
          '-recv_timeout',
          '5000',
          '-trace_msg',
          '-message_file',
          log,
          '-au',
          u.body.extension_number,
          '-ap',
          shortPassword(minted.body.token),
          '-key',
          'domain',
          `${acct.id}.sip.test`,
          '-key',
          'ext',
          u.body.extension_number,
        ],
        { limitMs: 20000 },
      );
      await run.done;
      assert.ok(existsSync(log), `SIPp wrote no message log: ${run.output()}`);
      return [...readFileSync(log, 'utf8').matchAll(/^SIP\/2\.0 (\d{3})/gm)].map((m) => Number(m[1]));
    };
    assert.deepEqual(await register(), [401, 200]);
    const revoked = await api(base(a), acct.key, 'POST', '/api/phone-tokens/revoke', {
      uuid: minted.body.phone_token.uuid,
    });
    assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
    await new Promise((r) => setTimeout(r, 300)); // the notification reaches B at A's commit
    assert.deepEqual(await register(), [401, 403]);
  });
});
