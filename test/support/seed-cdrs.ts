import { randomUUID } from 'node:crypto';
import type { Db } from '../../store/index.js';

const PREFIXES = ['+25471', '+25472', '+25410', '+25575', '+25677', '+44207', '+12125', '+25411'];

/**
 * Synthetic ended calls for chart tests, screenshots and the chart bench: `count` CDRs of `accountId` spread over
 * the last `days` days (busier by day than by night), mostly outbound to a few prefixes, about two in three
 * answered. A seeded generator: the same arguments give the same rows.
 */
export async function seedCdrs(
  db: Db,
  o: { accountId: string; count: number; days: number; now?: number; seed?: number; batch?: number },
): Promise<void> {
  let s = o.seed ?? 1;
  const rnd = () => (s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  const now = o.now ?? Date.now();
  const batch = o.batch ?? 500;
  for (let done = 0; done < o.count;) {
    const rows = [];
    for (let i = 0; i < batch && done < o.count; i++, done++) {
      let at = now - rnd() * o.days * 86400_000;
      // Fewer calls at night (UTC+3 hours 0-6).
      if ((new Date(at).getUTCHours() + 3) % 24 < 6 && rnd() < 0.7) at -= 9 * 3600_000;
      const answered = rnd() < 0.66;
      const outbound = rnd() < 0.75;
      const talk = answered ? Math.round(5 + rnd() * rnd() * 600) : 0;
      const prefix = PREFIXES[Math.floor(rnd() * rnd() * PREFIXES.length)]!;
      const created = new Date(at).toISOString();
      rows.push({
        id: randomUUID(),
        sid: `CA${randomUUID().replace(/-/g, '')}`,
        account_id: o.accountId,
        direction: outbound ? 'outbound' : 'inbound',
        from_number: outbound ? '+254711000001' : `${prefix}${String(done).padStart(6, '0')}`,
        to_number: outbound ? `${prefix}${String(done).padStart(6, '0')}` : '+254711000001',
        status: answered ? 'completed' : 'failed',
        reason_code: answered ? 'END.0200' : 'END.0486',
        duration_seconds: talk + 3,
        talk_seconds: answered ? talk : null,
        cost_cents: answered ? Math.ceil(talk / 60) * (outbound ? 300 : 50) : 0,
        started_at: created,
        answered_at: answered ? new Date(at + 3000).toISOString() : null,
        ended_at: new Date(at + 3000 + talk * 1000).toISOString(),
        created_at: created,
      });
    }
    await db.batchInsert('calls', rows, batch);
  }
}
