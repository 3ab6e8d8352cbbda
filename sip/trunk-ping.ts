import type { TrunkRow } from '../store/index.js';
import type { UserAgent } from './stack/index.js';

/**
 * One OPTIONS to a trunk's signalling address (RFC 3261 §11). Any final response but 408 and 5xx shows the carrier
 * is there (a 404 or 405 from a carrier that does not serve OPTIONS still proves it alive); no answer within the
 * ping interval (at most 5 s), a 408, a 5xx or a transport error counts as a failure.
 */
export async function pingTrunk(ua: UserAgent, trunk: TrunkRow, intervalSeconds: number): Promise<boolean> {
  const hostPort = `${trunk.host}:${trunk.port}`;
  const waitMs = Math.max(500, Math.min(5, intervalSeconds) * 1000);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), waitMs);
  });
  const answered = ua
    .request(`sip:${hostPort}`, {
      method: 'OPTIONS',
      proxy: `${hostPort};transport=${trunk.transport}`,
      headers: { Accept: 'application/sdp' },
    })
    .then((res) => res.status !== 408 && res.status < 500)
    .catch(() => false);
  try {
    return await Promise.race([answered, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
