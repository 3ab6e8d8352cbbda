import { z } from 'zod';
import type { ConferenceControl, ConferenceView, ParticipantView } from '../../calls/index.js';
import { authOf } from '../auth.js';
import { ApiError, notFound } from '../errors.js';
import type { RouteDeps, RouteSpec, RouteTable } from '../route-table.js';
import { parseBody } from '../validation.js';
import type { Context } from 'koa';

// ---- shapes (beyond the spec: docs/api.md, "Conferences") ----
const ConferenceOut = z.object({
  sid: z.string(),
  name: z.string(),
  status: z.enum(['waiting', 'in-progress']),
  created_at: z.string(),
  started_at: z.string().nullable(),
  participant_count: z.number().int(),
  recording: z.boolean(),
});
const ConferenceListOut = z.object({ conferences: z.array(ConferenceOut) });
const ParticipantOut = z.object({
  call_sid: z.string(),
  call_uuid: z.string(),
  muted: z.boolean(),
  hold: z.boolean(),
  waiting: z.boolean().describe('Waiting for the conference to start (hears the wait audio)'),
  start_conference_on_enter: z.boolean(),
  end_conference_on_exit: z.boolean(),
  joined_at: z.string(),
});
const ParticipantListOut = z.object({ participants: z.array(ParticipantOut) });
const ParticipantUpdateBody = z
  .strictObject({
    muted: z.boolean().optional().describe('true: the others stop hearing this participant; false: heard again'),
    hold: z.boolean().optional().describe('true: out of the mix both ways, hearing the wait audio; false: back in'),
  })
  .refine((b) => b.muted !== undefined || b.hold !== undefined, { message: 'give muted, hold or both' });

const conferenceOut = (c: ConferenceView) => ({
  sid: c.sid,
  name: c.name,
  status: c.status,
  created_at: c.createdAt,
  started_at: c.startedAt,
  participant_count: c.participantCount,
  recording: c.recording,
});
const participantOut = (p: ParticipantView) => ({
  call_sid: p.callSid,
  call_uuid: p.callUuid,
  muted: p.muted,
  hold: p.hold,
  waiting: p.waiting,
  start_conference_on_enter: p.startConferenceOnEnter,
  end_conference_on_exit: p.endConferenceOnExit,
  joined_at: p.joinedAt,
});

/**
 * Live conferences of the account (<Dial><Conference>, calls/conference/): list them, list a conference's
 * participants, mute/unmute or hold/unhold one, and kick one out (its Dial ends `completed` and its document goes
 * on). Conferences are live state of the switch: one that has ended is 404 CONFERENCE_NOT_FOUND.
 */
export function conferenceRoutes(t: RouteTable, d: RouteDeps): void {
  const control = (): ConferenceControl => {
    const c = d.calls.conferences;
    if (!c) throw new ApiError(503, 'CONFERENCES_UNAVAILABLE', 'This server runs no call engine.');
    return c;
  };

  t.add(
    {
      method: 'get',
      path: '/api/conferences',
      summary: 'List the live conferences of the account',
      ok: { status: 200, schema: ConferenceListOut },
      errors: [401],
    },
    async (ctx) => {
      ctx.body = { conferences: (await control().list(authOf(ctx).account.id)).map(conferenceOut) };
    },
  );

  // The routes on one live conference or participant: each looks it up for the account, answers 404 with the code
  // of what is gone (401 and, with a body, 400 as any route), else its body (or 204 when it has none).
  const live: Array<{
    spec: Omit<RouteSpec, 'errors'>;
    gone: 'Conference' | 'Participant';
    run: (ctx: Context, account: string, sid: string) => Promise<object | boolean | undefined>;
  }> = [
    {
      spec: {
        method: 'get',
        path: '/api/conferences/:sid',
        summary: 'One live conference',
        ok: { status: 200, schema: ConferenceOut },
      },
      gone: 'Conference',
      run: async (_ctx, account, sid) => {
        const c = await control().find(account, sid);
        return c && conferenceOut(c);
      },
    },
    {
      spec: {
        method: 'get',
        path: '/api/conferences/:sid/participants',
        summary: "A live conference's participants, in the order they joined",
        ok: { status: 200, schema: ParticipantListOut },
      },
      gone: 'Conference',
      run: async (_ctx, account, sid) => {
        const list = await control().participants(account, sid);
        return list && { participants: list.map(participantOut) };
      },
    },
    {
      spec: {
        method: 'post',
        path: '/api/conferences/:sid/participants/:callSid',
        summary: 'Mute/unmute or hold/unhold a participant',
        body: ParticipantUpdateBody,
        ok: { status: 200, schema: ParticipantOut },
      },
      gone: 'Participant',
      run: async (ctx, account, sid) => {
        const body = await parseBody(ctx, ParticipantUpdateBody);
        const p = await control().update(account, sid, String(ctx.params.callSid), body);
        return p && participantOut(p);
      },
    },
    {
      spec: {
        method: 'post',
        path: '/api/conferences/:sid/participants/:callSid/kick',
        summary: 'Remove a participant (its Dial ends and its verbs go on)',
        ok: { status: 204, description: 'Removed' },
      },
      gone: 'Participant',
      run: async (ctx, account, sid) => control().kick(account, sid, String(ctx.params.callSid)),
    },
  ];
  for (const r of live) {
    t.add({ ...r.spec, errors: r.spec.body ? [400, 401, 404] : [401, 404] }, async (ctx) => {
      const out = await r.run(ctx, authOf(ctx).account.id, String(ctx.params.sid));
      if (!out) throw notFound(r.gone, r.gone === 'Conference' ? 'CONFERENCE_NOT_FOUND' : 'PARTICIPANT_NOT_FOUND');
      if (out === true) ctx.status = 204;
      else ctx.body = out;
    });
  }
}
