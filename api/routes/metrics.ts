import { timingSafeEqual } from 'node:crypto';
import type { Router } from '@koa/router';
import type { SwitchMetrics } from '../../metrics/index.js';
import { getSettingCached, sha256Hex, type Db } from '../../store/index.js';
import { ApiError } from '../errors.js';

/** The platform setting holding the SHA-256 of the operator's metrics token (`simu metrics token`). */
export const METRICS_TOKEN_SETTING = 'metrics_token_sha256';

/**
 * GET /metrics: the switch's figures in the Prometheus text format (docs/api.md, "Metrics"), for the operator only.
 * Not under /api and not an API key: Prometheus scrapes with the bearer token `simu metrics token` printed, whose
 * SHA-256 is compared in constant time with the stored one. No token minted yet: 401 all the same.
 */
export function metricsRoute(router: Router, db: Db, metrics: SwitchMetrics): void {
  router.get('/metrics', async (ctx) => {
    const m = /^Bearer[ \t]+([A-Za-z0-9_-]{1,200})[ \t]*$/i.exec(ctx.get('authorization'));
    const stored = await getSettingCached(db, METRICS_TOKEN_SETTING);
    const presented = m ? Buffer.from(sha256Hex(m[1]), 'hex') : undefined;
    const expected = stored && /^[0-9a-f]{64}$/.test(stored) ? Buffer.from(stored, 'hex') : undefined;
    if (!presented || !expected || !timingSafeEqual(presented, expected))
      throw new ApiError(
        401,
        'METRICS_TOKEN_INVALID',
        'GET /metrics needs the operator token of `simu metrics token`.',
        {
          'WWW-Authenticate': 'Bearer',
        },
      );
    try {
      ctx.body = await metrics.text();
    } catch {
      throw new ApiError(503, 'METRICS_UNAVAILABLE', 'The figures could not be collected; retry.');
    }
    ctx.type = metrics.contentType;
  });
}
