import { EVENT_CATALOGUE, REASON_LABELS } from '../events/index.js';
import {
  findCall,
  findCallBySid,
  listCallEvents,
  listCallLedgerRows,
  listCallWebhooks,
  type Db,
} from '../store/index.js';
import { callOut, chartData, chartWindow, ChartWindowError } from '../api/index.js';
import { WebError } from './web-kit.js';

/**
 * The portal's read-only pages, for the signed-in account: the code catalogue (the event view's labels), the
 * charts' figures, a call's timeline (events, status callbacks, charges), and a call by its SID (the event view
 * names each stream frame's call by its numbers; frames carry the SID only). Undefined: not one of these routes.
 */
export async function portalReads(
  db: Db,
  readDb: Db,
  accountId: string,
  route: string,
  query: Record<string, unknown>,
): Promise<unknown> {
  if (route === 'GET /portal/api/codes') return { events: EVENT_CATALOGUE, reasons: REASON_LABELS };
  if (route === 'GET /portal/api/charts') {
    try {
      return await chartData(readDb, chartWindow(query, accountId));
    } catch (e) {
      if (e instanceof ChartWindowError) throw new WebError(400, 'VALIDATION_ERROR', e.message);
      throw e;
    }
  }
  const bySid = /^GET \/portal\/api\/calls\/by-sid\/([A-Za-z0-9_]{1,64})$/.exec(route);
  if (bySid) {
    const call = await findCallBySid(db, accountId, bySid[1]!);
    if (!call) throw new WebError(404, 'CALL_NOT_FOUND', 'No such call.');
    return callOut(call);
  }
  const tl = /^GET \/portal\/api\/calls\/([0-9a-fA-F-]{36})\/timeline$/.exec(route);
  if (tl) {
    const id = tl[1]!;
    if (!(await findCall(db, accountId, id))) throw new WebError(404, 'CALL_NOT_FOUND', 'No such call.');
    const [events, webhooks, charges] = await Promise.all([
      listCallEvents(db, accountId, id),
      listCallWebhooks(db, accountId, id),
      listCallLedgerRows(db, accountId, id),
    ]);
    return {
      events: events.map((r) => ({ code: r.code, event: r.event, data: safeJson(r.data), timestamp: r.created_at })),
      webhooks: webhooks.map((w) => ({
        ...w,
        latency_ms: w.done_at ? Date.parse(w.done_at) - Date.parse(w.created_at) : null,
      })),
      charges,
    };
  }
  return undefined;
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}
