import type { Db } from './db.js';
import { firstRow, insertRows, runSqlCount } from './fixed-sql.js';
import { nowIso } from './ids.js';
import { cachedRead } from './read-cache.js';

export async function getSetting(db: Db, key: string): Promise<string | undefined> {
  const row = await firstRow(db, 'select "value" from "platform_settings" where "key" = ? limit 1', [key]);
  return row?.value as string | undefined;
}

export async function putSetting(db: Db, key: string, value: string): Promise<void> {
  const updated = await runSqlCount(
    db,
    'update "platform_settings" set "value" = ?, "updated_at" = ? where "key" = ?',
    [value, nowIso(), key],
    { table: 'platform_settings', columns: ['value', 'updated_at'] },
  );
  if (updated === 0) await insertRows(db, 'platform_settings', [{ key, value, updated_at: nowIso() }]);
}

/** getSetting through the per-process read cache (store/read-cache.ts): admission's 'draining' check per call. */
export async function getSettingCached(db: Db, key: string): Promise<string | undefined> {
  return cachedRead(db, 'platform_settings', key, () => getSetting(db, key));
}
