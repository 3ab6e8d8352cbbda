import { z } from 'zod';
import { getAccount, updateAccount, type AccountRow } from '../../store/index.js';
import { authOf } from '../auth.js';
import type { RouteDeps, RouteTable } from '../route-table.js';
import { parseBody } from '../validation.js';

export const PrepaidSettingsOut = z.object({
  language: z.enum(['en', 'sw']),
  credit_warning_seconds: z.number().int(),
  last_good_document: z.boolean(),
});

export const PrepaidSettingsBody = z.strictObject({
  language: z.enum(['en', 'sw']).optional(),
  credit_warning_seconds: z.number().int().min(0).max(600).optional(),
  last_good_document: z.boolean().optional(),
});

const out = (a: AccountRow): z.infer<typeof PrepaidSettingsOut> => ({
  language: a.language === 'sw' ? 'sw' : 'en',
  credit_warning_seconds: a.credit_warning_seconds,
  last_good_document: Boolean(a.last_good_document),
});

/**
 * The account's prepaid experience (beyond the spec, docs/api.md "Notices the switch speaks"): the
 * language of the switch's notices to its callers, the lead time of the warning before a prepaid call is cut
 * (0 to 600 s, 0: none) and the opt-in to the last known good call-control document (docs/webhooks.md).
 */
export function prepaidSettingsRoutes(t: RouteTable, d: RouteDeps): void {
  t.add(
    {
      method: 'get',
      path: '/api/account/prepaid',
      summary: "The account's notice language, warning lead time and last-good-document opt-in (beyond the spec)",
      ok: { status: 200, schema: PrepaidSettingsOut },
      errors: [401],
    },
    async (ctx) => {
      ctx.body = out(await getAccount(d.db, authOf(ctx).account.id));
    },
  );
  t.add(
    {
      method: 'post',
      path: '/api/account/prepaid',
      summary: 'Change them (only supplied fields change; beyond the spec)',
      body: PrepaidSettingsBody,
      ok: { status: 200, schema: PrepaidSettingsOut },
      errors: [400, 401],
    },
    async (ctx) => {
      const body = await parseBody(ctx, PrepaidSettingsBody);
      const id = authOf(ctx).account.id;
      const patch: Partial<AccountRow> = { ...body };
      ctx.body = out(Object.keys(patch).length ? await updateAccount(d.db, id, patch) : await getAccount(d.db, id));
    },
  );
}
