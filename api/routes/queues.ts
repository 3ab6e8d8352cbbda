import { z } from 'zod';
import type { QueueDirectory, QueueInfo, QueueMemberInfo } from '../../calls/index.js';
import { authOf } from '../auth.js';
import { ApiError, notFound } from '../errors.js';
import type { RouteDeps, RouteTable } from '../route-table.js';
import { parseBody } from '../validation.js';
import type { Context } from 'koa';

// ---- shapes (beyond the spec: docs/api.md, "Queues") ----
const QueueOut = z.object({
  name: z.string(),
  size: z.number().int().describe('Callers waiting now'),
  average_wait_seconds: z.number().int().describe('Mean wait of the callers who left the queue and of those waiting'),
});
const QueueListOut = z.object({ queues: z.array(QueueOut) });
const MemberOut = z.object({
  call_uuid: z.string(),
  call_sid: z.string(),
  position: z.number().int().describe('1 for the longest-waiting caller: the next one an agent takes'),
  wait_seconds: z.number().int(),
  joined_at: z.string(),
});
const MemberListOut = z.object({ members: z.array(MemberOut) });
const DequeueBody = z.strictObject({
  url: z
    .string()
    .max(2048)
    .url()
    .refine((u) => /^https?:\/\//i.test(u), { message: 'an absolute http(s) URL' })
    .describe("Where the caller's next verb document is requested (signed, with QueueResult redirected)"),
});

const queueOut = (q: QueueInfo) => ({ name: q.name, size: q.size, average_wait_seconds: q.averageWaitSeconds });
const memberOut = (m: QueueMemberInfo) => ({
  call_uuid: m.callId,
  call_sid: m.callSid,
  position: m.position,
  wait_seconds: m.waitSeconds,
  joined_at: m.joinedAt,
});

/**
 * The account's call queues (<Enqueue>, calls/queue/): list them with their size and average wait, list the callers
 * waiting in one, and take one caller (or the front one) out of its queue to the verb document at a URL. Queues are
 * live state of the process that holds the calls (docs/api.md, Queues): an empty queue is 404 QUEUE_NOT_FOUND.
 */
export function queueRoutes(t: RouteTable, d: RouteDeps): void {
  const queues = (): QueueDirectory => {
    const q = d.calls.queues;
    if (!q) throw new ApiError(503, 'QUEUES_UNAVAILABLE', 'This server runs no call engine.');
    return q;
  };
  const nameOf = (ctx: Context) => String(ctx.params.name);

  t.add(
    {
      method: 'get',
      path: '/api/queues',
      summary: 'List the queues of the account with their size and average wait',
      ok: { status: 200, schema: QueueListOut },
      errors: [401],
    },
    async (ctx) => {
      ctx.body = { queues: (await queues().list(authOf(ctx).account.id)).map(queueOut) };
    },
  );

  t.add(
    {
      method: 'get',
      path: '/api/queues/:name/members',
      summary: 'The callers waiting in a queue, longest-waiting first',
      ok: { status: 200, schema: MemberListOut },
      errors: [401, 404],
    },
    async (ctx) => {
      const list = await queues().members(authOf(ctx).account.id, nameOf(ctx));
      if (!list) throw notFound('Queue', 'QUEUE_NOT_FOUND');
      ctx.body = { members: list.map(memberOut) };
    },
  );

  t.add(
    {
      method: 'post',
      path: '/api/queues/:name/members/:callUuid/dequeue',
      summary: 'Take a waiting caller (callUuid, or `front`) out of the queue to the verb document at `url`',
      body: DequeueBody,
      ok: { status: 204, description: 'The caller left the queue; its next document is being requested' },
      errors: [400, 401, 404],
    },
    async (ctx) => {
      const { url } = await parseBody(ctx, DequeueBody);
      const callUuid = String(ctx.params.callUuid);
      if (!(await queues().dequeueToUrl(authOf(ctx).account.id, nameOf(ctx), callUuid, url))) {
        throw notFound('Queue member', 'QUEUE_MEMBER_NOT_FOUND');
      }
      ctx.status = 204;
    },
  );
}
