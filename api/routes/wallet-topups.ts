import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { applyTopupPayment, applyTopupReversal, parseMoney, type TopupOutcome } from '../../billing/index.js';
import { getTopupProvider } from '../../store/index.js';
import { ApiError } from '../errors.js';
import type { RouteDeps, RouteTable } from '../route-table.js';
import { parseJsonText, parseWith, readRawBody } from '../validation.js';

/** A payment confirmation is a few hundred bytes; anything near this is not one. */
const MAX_CALLBACK_BYTES = 8 * 1024;

const Receipt = z.string().regex(/^[A-Za-z0-9_-]{4,64}$/, 'a provider receipt id (4-64 letters, digits, - or _)');

/**
 * A mobile-money payment confirmation (shaped like an M-Pesa C2B confirmation, under names of our own). A reversal
 * names the payment it reverses; its own receipt is kept as its reference.
 */
export const TopupCallbackBody = z.strictObject({
  type: z.enum(['payment', 'reversal']),
  receipt: Receipt,
  original_receipt: Receipt.optional(),
  amount: z.string().regex(/^\d{1,9}(\.\d{1,2})?$/, 'an amount with at most two decimals, e.g. "1200.50"'),
  currency: z.string().regex(/^[A-Z]{3}$/),
  msisdn: z.string().regex(/^\+?[1-9]\d{6,14}$/, 'the payer number, E.164 digits'),
  account_reference: z.uuid().optional(),
  timestamp: z.iso.datetime({ offset: true }),
});

export const TopupCallbackOut = z.object({
  result: z.enum(['credited', 'reversed', 'duplicate']),
  receipt: z.string(),
  transaction_uuid: z.string(),
});

const refused = (): ApiError =>
  new ApiError(401, 'TOPUP_SIGNATURE_INVALID', 'The callback signature does not verify for this provider.');

/**
 * Is `header` (`sha256=<hex>`) the HMAC-SHA256 of the raw body under `secret`? Compared in constant time, so how
 * much of a forged signature matched is not measurable.
 */
export function topupSignatureValid(secret: string, raw: Buffer, header: string): boolean {
  const m = /^sha256=([0-9a-f]{64})$/i.exec(header.trim());
  if (!m) return false;
  const want = createHmac('sha256', secret).update(raw).digest();
  return timingSafeEqual(want, Buffer.from(m[1]!, 'hex'));
}

/**
 * POST /api/wallet/topups/callback (beyond the spec, docs/api.md): a provider the operator configured
 * (`simu wallet provider set`) confirms a payment or a reversal. No API key: the body is signed with the provider's
 * secret (header `X-Topup-Signature: sha256=<hex HMAC of the raw body>`, provider in `X-Topup-Provider`), and its
 * timestamp must be within `prepaid.topupToleranceSeconds` of now. Nothing is written unless all of that holds.
 */
export function walletTopupRoutes(t: RouteTable, d: RouteDeps): void {
  t.add(
    {
      method: 'post',
      path: '/api/wallet/topups/callback',
      summary: 'Mobile-money top-up confirmation or reversal, signed by the provider (beyond the spec)',
      auth: false,
      body: TopupCallbackBody,
      ok: { status: 200, schema: TopupCallbackOut },
      errors: [400, 401, 404, 413, 422],
    },
    async (ctx) => {
      const raw = await readRawBody(ctx, MAX_CALLBACK_BYTES);
      const name = ctx.get('x-topup-provider');
      const provider = /^[a-z0-9-]{1,40}$/.test(name) ? await getTopupProvider(d.db, name) : undefined;
      // An unknown provider and a bad signature answer alike: the answer does not tell which providers exist.
      if (!provider || !topupSignatureValid(provider.secret, raw, ctx.get('x-topup-signature'))) throw refused();
      const body = parseWith(TopupCallbackBody, parseJsonText(ctx, raw.toString('utf8')) ?? {}, 'body');
      const skew = Math.abs(Date.now() - Date.parse(body.timestamp));
      if (skew > d.config.prepaid.topupToleranceSeconds * 1000)
        throw new ApiError(401, 'TOPUP_STALE', 'The callback timestamp is outside the accepted window.');
      const common = {
        provider: provider.name,
        amountCents: parseMoney(body.amount),
        currency: body.currency,
        msisdn: body.msisdn.replace(/^\+/, ''),
        paidAt: new Date(body.timestamp).toISOString(),
      };
      let out: TopupOutcome;
      if (body.type === 'payment') {
        if (!body.account_reference)
          throw new ApiError(400, 'VALIDATION_ERROR', 'A payment needs the account_reference it credits.');
        out = await applyTopupPayment(d.db, { ...common, receipt: body.receipt, accountId: body.account_reference });
      } else {
        if (!body.original_receipt)
          throw new ApiError(400, 'VALIDATION_ERROR', 'A reversal needs the original_receipt it reverses.');
        out = await applyTopupReversal(d.db, { ...common, receipt: body.original_receipt, reference: body.receipt });
      }
      d.log.info(
        { provider: provider.name, receipt: out.topup.receipt, kind: out.topup.kind, duplicate: out.duplicate },
        'top-up callback',
      );
      ctx.body = {
        result: out.duplicate ? 'duplicate' : body.type === 'payment' ? 'credited' : 'reversed',
        receipt: body.receipt,
        transaction_uuid: out.topup.ledger_id,
      };
    },
  );
}
