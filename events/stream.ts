import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket } from 'ws';
import { roomLogger, type Logger } from '../config/index.js';
import type { EventBus, BusEvent } from './bus.js';

/** Who a stream token belongs to (what `consumeStreamToken` in store/stream-tokens.ts returns). */
export interface StreamPrincipal {
  accountId: string | null;
  staff: boolean;
  /** The API key the token was minted with (null: staff, or a token from before keys were recorded). */
  apiKeyId?: string | null;
}

/** Of the given accounts and keys, those no longer allowed to stream (store/stream-tokens.ts answers this). */
export type LapsedPrincipals = (
  accountIds: string[],
  apiKeyIds: string[],
) => Promise<{ accounts: string[]; apiKeys: string[] }>;

export interface StreamDeps {
  bus: EventBus;
  /** Spends a single-use stream token; null when unknown, used or expired. */
  consumeToken: (token: string) => Promise<StreamPrincipal | null>;
  /** Path of the stream (spec: `{ws_url}/api/stream`). */
  path?: string;
  /** Ping interval; a socket that has not answered the previous ping is terminated. */
  pingIntervalMs?: number;
  /** A socket with more than this many bytes queued is too slow and is dropped. */
  maxBufferedBytes?: number;
  /**
   * Which sockets' keys were revoked or accounts suspended. Asked every `recheckIntervalMs` (writes made by another
   * process, e.g. `simu account suspend`) and at once whenever `onAuthChange` fires (writes in this process).
   */
  lapsed?: LapsedPrincipals;
  /** Subscribes to this process's key and account writes; returns an unsubscribe. */
  onAuthChange?: (listener: () => void) => () => void;
  /** How often open sockets are re-checked against the store. */
  recheckIntervalMs?: number;
  logger?: Logger;
}

export interface StreamServer {
  /** Sockets currently open. */
  readonly clientCount: number;
  /** Closes every socket and detaches from the HTTP server and the bus. Safe to call twice. */
  close(): Promise<void>;
}

interface StreamClient {
  ws: WebSocket;
  principal: StreamPrincipal;
  alive: boolean;
}

/** WebSocket close codes (RFC 6455 §7.4.1): 1001 going away on shutdown, 1008 policy violation when the key is
 *  revoked or the account suspended. */
const CLOSE_GOING_AWAY = 1001;
export const CLOSE_POLICY_VIOLATION = 1008;
/** Close reasons (short: a close frame's reason is at most 123 bytes). */
export const CLOSE_REASON_KEY_REVOKED = 'api key revoked';
export const CLOSE_REASON_ACCOUNT_SUSPENDED = 'account suspended';

/**
 * The event stream on the API's own HTTP server (spec: Stream; Authentication 5). Only upgrades whose path is the
 * stream path are taken; any other upgrade is left untouched for other handlers (e.g. SIP over WebSocket).
 *
 * A connection needs `?token=`, a single-use stream token: it is spent before the handshake completes, and a
 * missing, unknown, used or expired token gets a plain HTTP 401 and no socket. An account token receives that
 * account's frames; a staff token receives every account's frames plus staff-only ones (PLATFORM.0001).
 *
 * Each frame is serialised once and written to every interested socket. A socket whose send queue passes
 * `maxBufferedBytes` is terminated instead of buffering without bound, so one slow reader never holds up the
 * rest; a socket that does not answer a ping within one interval is terminated as dead.
 */
export function attachStream(server: http.Server, deps: StreamDeps): StreamServer {
  const path = deps.path ?? '/api/stream';
  const pingIntervalMs = deps.pingIntervalMs ?? 30_000;
  const maxBuffered = deps.maxBufferedBytes ?? 1024 * 1024;
  const log = deps.logger ?? roomLogger('events').child({ part: 'stream' });
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096, clientTracking: false });
  const byAccount = new Map<string, Set<StreamClient>>();
  const staff = new Set<StreamClient>();
  let open = 0;
  let closed = false;

  const drop = (c: StreamClient, why: string): void => {
    log.info({ accountId: c.principal.accountId, staff: c.principal.staff, why }, 'stream socket dropped');
    c.ws.terminate();
  };
  /** A closing handshake with a code and reason; a peer that does not complete it is cut after a moment. */
  const closeWith = (c: StreamClient, code: number, reason: string): void => {
    if (c.ws.readyState !== WebSocket.OPEN) return;
    log.info({ accountId: c.principal.accountId, code, reason }, 'stream socket closed');
    c.ws.close(code, reason);
    setTimeout(() => c.ws.terminate(), 1000).unref();
  };

  // The frame is encoded once per event and the same bytes handed to every socket as a text message.
  const TEXT = { binary: false, compress: false } as const;
  const send = (c: StreamClient, bytes: Buffer): void => {
    if (c.ws.readyState !== WebSocket.OPEN) return;
    if (c.ws.bufferedAmount > maxBuffered) return drop(c, 'slow consumer');
    c.ws.send(bytes, TEXT);
  };

  const onEvent = (e: BusEvent): void => {
    const targets = !e.staffOnly && e.accountId !== null ? byAccount.get(e.accountId) : undefined;
    if (!targets?.size && staff.size === 0) return;
    const bytes = Buffer.from(JSON.stringify(e.frame), 'utf8');
    if (targets) for (const c of targets) send(c, bytes);
    for (const c of staff) send(c, bytes);
  };
  const unobserve = deps.bus.observe(onEvent, { remote: true });

  const register = (ws: WebSocket, principal: StreamPrincipal): void => {
    const c: StreamClient = { ws, principal, alive: true };
    const set = principal.staff ? staff : getOrCreate(byAccount, principal.accountId!);
    set.add(c);
    open++;
    ws.on('pong', () => (c.alive = true));
    ws.on('message', () => undefined); // the stream is one-way; client messages are ignored
    ws.on('error', (err) => log.debug({ err }, 'stream socket error'));
    ws.on('close', () => {
      open--;
      set.delete(c);
      if (!principal.staff && set.size === 0) byAccount.delete(principal.accountId!);
    });
  };

  const heartbeat = setInterval(() => {
    for (const set of [staff, ...byAccount.values()]) {
      for (const c of set) {
        if (!c.alive) {
          drop(c, 'no pong');
          continue;
        }
        c.alive = false;
        c.ws.ping();
      }
    }
  }, pingIntervalMs);
  heartbeat.unref();

  // Revocation and suspension close the account's sockets: at once for writes in this process, within one recheck
  // interval for writes by another. Rechecks never overlap; a request during one runs one more after.
  let checking: Promise<void> | null = null;
  let again = false;
  const recheck = (): void => {
    if (!deps.lapsed || closed) return;
    if (checking) return void (again = true);
    const accounts = [...byAccount.keys()];
    if (accounts.length === 0) return;
    const keys = new Set<string>();
    for (const set of byAccount.values()) for (const c of set) if (c.principal.apiKeyId) keys.add(c.principal.apiKeyId);
    checking = deps
      .lapsed(accounts, [...keys])
      .then(
        (r) => {
          const goneAccounts = new Set(r.accounts);
          const goneKeys = new Set(r.apiKeys);
          for (const [accountId, set] of byAccount)
            for (const c of set) {
              if (goneAccounts.has(accountId)) closeWith(c, CLOSE_POLICY_VIOLATION, CLOSE_REASON_ACCOUNT_SUSPENDED);
              else if (c.principal.apiKeyId && goneKeys.has(c.principal.apiKeyId))
                closeWith(c, CLOSE_POLICY_VIOLATION, CLOSE_REASON_KEY_REVOKED);
            }
        },
        (err) => log.warn({ err }, 'stream principal re-check failed'),
      )
      .finally(() => {
        checking = null;
        if (again) {
          again = false;
          recheck();
        }
      });
  };
  const recheckTimer = setInterval(recheck, deps.recheckIntervalMs ?? 5000);
  recheckTimer.unref();
  const unsubscribeAuth = deps.onAuthChange?.(recheck);

  const onUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer): void => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://stream.invalid');
    } catch {
      return;
    }
    if (url.pathname !== path && url.pathname !== `${path}/`) return; // someone else's upgrade
    socket.on('error', () => socket.destroy());
    if (closed) return refuse(socket, 503, 'Service Unavailable');
    const token = url.searchParams.get('token') ?? '';
    admit(token).then(
      (principal) => {
        if (!principal) return refuse(socket, 401, 'Unauthorized');
        if (closed || socket.destroyed) return refuse(socket, 503, 'Service Unavailable');
        wss.handleUpgrade(req, socket, head, (ws) => register(ws, principal));
      },
      (err) => {
        log.error({ err }, 'stream token check failed');
        refuse(socket, 503, 'Service Unavailable');
      },
    );
  };
  /** Spends the token; null unless it names a staff stream or an account whose key and status are still good. */
  const admit = async (token: string): Promise<StreamPrincipal | null> => {
    const principal = await deps.consumeToken(token);
    if (!principal || (!principal.staff && !principal.accountId)) return null;
    // A token minted before its key was revoked (or its account suspended) opens nothing.
    if (!principal.staff && deps.lapsed) {
      const r = await deps.lapsed([principal.accountId!], principal.apiKeyId ? [principal.apiKeyId] : []);
      if (r.accounts.length > 0 || r.apiKeys.length > 0) return null;
    }
    return principal;
  };
  server.on('upgrade', onUpgrade);

  return {
    get clientCount() {
      return open;
    },
    async close() {
      if (closed) return;
      closed = true;
      server.off('upgrade', onUpgrade);
      unobserve();
      clearInterval(heartbeat);
      clearInterval(recheckTimer);
      unsubscribeAuth?.();
      await checking;
      const all = [...staff, ...[...byAccount.values()].flatMap((s) => [...s])];
      await Promise.all(
        all.map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.ws.readyState === WebSocket.CLOSED) return resolve();
              c.ws.once('close', () => resolve());
              c.ws.close(CLOSE_GOING_AWAY, 'server closing');
              // A peer that never completes the closing handshake is cut after a moment.
              setTimeout(() => c.ws.terminate(), 1000).unref();
            }),
        ),
      );
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

function refuse(socket: Duplex, status: number, reason: string): void {
  if (socket.destroyed) return;
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

function getOrCreate<K, V>(m: Map<K, Set<V>>, k: K): Set<V> {
  let s = m.get(k);
  if (!s) m.set(k, (s = new Set()));
  return s;
}
