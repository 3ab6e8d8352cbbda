import type { Context } from 'koa';
import {
  countCallsCreatedSince,
  getSetting,
  listAccounts,
  listAudit,
  listDestinationRules,
  listLiveCallsAllAccounts,
  listPool,
  listRates,
  listTrunks,
  type AccountRow,
  type Db,
} from '../store/index.js';
import { formatMoney, parseMoney } from '../billing/index.js';
import { listBans, type CapturedMessage } from '../sip/index.js';
import {
  chartData,
  chartWindow,
  ChartWindowError,
  createAccountOp,
  hangupOp,
  liftBanOp,
  OperationError,
  setAccountCapsOp,
  setAccountStatusOp,
  setDrainingOp,
  topUpOp,
} from '../api/index.js';
import { readJsonBody, WebError } from './web-kit.js';
import type { Clock } from '../kit/index.js';

/** What the live view reads from the running switch (wired in switch.ts). */
export interface ConsoleLive {
  /** Ends a call in progress as DELETE /api/calls/{id} does; false when it is not live. */
  hangup(callId: string): Promise<boolean>;
  overload(): { shedding: boolean } & Record<string, unknown>;
  registrations(): number;
  media(): Array<{ address: string; healthy: boolean }>;
  /** A call's SIP messages (its legs' and child legs'), by uuid or sid; undefined when none are kept. */
  sipLadder?(callId: string): CapturedMessage[] | undefined;
}

interface Ctx {
  db: Db;
  readDb: Db;
  actor: string;
  live?: ConsoleLive;
  clock: Pick<Clock, 'now'>;
}

const accountOut = (a: AccountRow) => ({
  uuid: a.id,
  name: a.name,
  status: a.status,
  balance: formatMoney(a.balance_cents),
  caps: { concurrency: a.max_concurrent_calls, cps: a.max_cps, max_duration_seconds: a.max_call_seconds },
  created_at: a.created_at,
});

const int = (v: unknown): number | undefined =>
  v === undefined || v === null || v === '' ? undefined : Number.isInteger(Number(v)) ? Number(v) : NaN;

function money(v: unknown): number {
  try {
    return parseMoney(String(v ?? ''));
  } catch {
    throw new WebError(400, 'VALIDATION_ERROR', 'The amount must look like 500.00.');
  }
}

/** The console's JSON endpoints; `route` is "METHOD /path" below /console/api. */
export async function consoleApi(ctx: Context, route: string, c: Ctx): Promise<void> {
  try {
    ctx.body = await dispatch(ctx, route, c);
  } catch (e) {
    if (e instanceof OperationError || e instanceof ChartWindowError)
      throw new WebError(400, 'VALIDATION_ERROR', e.message);
    throw e;
  }
}

async function dispatch(ctx: Context, route: string, c: Ctx): Promise<unknown> {
  const { db, actor } = c;
  const acct = /^POST \/accounts\/([0-9a-fA-F-]{36})\/(suspend|resume|caps|topup)$/.exec(route);
  if (acct) {
    const [, id, what] = acct as unknown as [string, string, string];
    const body = what === 'suspend' || what === 'resume' ? {} : await readJsonBody(ctx);
    if (what === 'suspend') return accountOut(await setAccountStatusOp(db, actor, id, 'suspended'));
    if (what === 'resume') return accountOut(await setAccountStatusOp(db, actor, id, 'active'));
    if (what === 'caps')
      return accountOut(
        await setAccountCapsOp(db, actor, id, {
          concurrency: int(body.concurrency),
          cps: int(body.cps),
          maxDurationSeconds: int(body.max_duration_seconds),
        }),
      );
    const r = await topUpOp(db, actor, id, money(body.amount), String(body.reason ?? ''));
    return { uuid: id, balance: formatMoney(r.balanceAfterCents) };
  }
  const hang = /^POST \/calls\/([0-9a-fA-F-]{36})\/hangup$/.exec(route);
  if (hang) {
    const live = c.live;
    if (!live) throw new WebError(503, 'CONSOLE_NO_SWITCH', 'No running switch to hang up on.');
    return { hung_up: await hangupOp(db, actor, hang[1]!, (id) => live.hangup(id)) };
  }
  const sip = /^GET \/calls\/([A-Za-z0-9_-]{1,64})\/sip$/.exec(route);
  if (sip) return sipLadder(c.live, sip[1]!);
  switch (route) {
    case 'GET /accounts':
      return (await listAccounts(db)).map(accountOut);
    case 'POST /accounts': {
      const body = await readJsonBody(ctx);
      const { account, key } = await createAccountOp(db, actor, String(body.name ?? ''), money(body.balance ?? '0'));
      return { account: accountOut(account), api_key: key };
    }
    case 'GET /numbers':
      return (await listPool(db)).map((n) => ({ uuid: n.id, number: n.number }));
    case 'GET /trunks':
      return (await listTrunks(db)).map((t) => ({ ...t, password: t.password ? '***' : null }));
    case 'GET /rates':
      return (await listRates(db)).map((r) => ({ ...r, amount: formatMoney(r.amount_cents) }));
    case 'GET /destinations':
      return listDestinationRules(db);
    case 'GET /bans':
      return listBans(db);
    case 'POST /bans/lift':
      return { lifted: await liftBanOp(db, actor, String((await readJsonBody(ctx)).address ?? '').slice(0, 64)) };
    case 'GET /platform':
      return { draining: (await getSetting(db, 'draining')) === 'true' };
    case 'POST /platform/drain':
      return { draining: await setDrainingOp(db, actor, true) };
    case 'POST /platform/resume':
      return { draining: await setDrainingOp(db, actor, false) };
    case 'GET /audit':
      return listAudit(db, { limit: 200 });
    case 'GET /live':
      return live(c);
    case 'GET /charts': {
      const q = ctx.query as Record<string, unknown>;
      const account = typeof q.account === 'string' && /^[0-9a-fA-F-]{36}$/.test(q.account) ? q.account : null;
      return chartData(c.readDb, chartWindow(q, account, c.clock.now()));
    }
  }
  throw new WebError(404, 'NOT_FOUND', 'No such console endpoint.');
}

/** GET /calls/{uuid or sid}/sip: the call's SIP ladder, each message with its bytes (base64) and as text. */
export function sipLadder(live: ConsoleLive | undefined, id: string) {
  const messages = live?.sipLadder?.(id);
  if (!messages)
    throw new WebError(
      404,
      'CONSOLE_NO_SIP_TRACE',
      'No SIP messages are kept for this call: they are kept for capture.ladderMinutes after its last one, at most ' +
        'capture.ladderMessages in all, by the switch that carried it.',
    );
  return {
    call: id,
    messages: messages.map((m) => ({
      at: new Date(m.at).toISOString(),
      at_us: Math.round(m.at * 1000),
      direction: m.direction,
      transport: m.transport,
      src: { address: m.srcAddress, port: m.srcPort },
      dst: { address: m.dstAddress, port: m.dstPort },
      first_line: m.startLine,
      text: m.data.toString('utf8'),
      base64: m.data.toString('base64'),
    })),
  };
}

async function live(c: Ctx) {
  const since = new Date(c.clock.now() - 10_000).toISOString();
  const [calls, recent] = await Promise.all([
    listLiveCallsAllAccounts(c.readDb),
    countCallsCreatedSince(c.readDb, since),
  ]);
  return {
    calls,
    calls_per_second: recent / 10,
    registrations: c.live?.registrations() ?? null,
    rtpengine: c.live?.media() ?? [],
    overload: c.live?.overload() ?? null,
  };
}
