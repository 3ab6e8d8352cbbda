import type { Db } from './db.js';
import { nowIso } from './ids.js';
import { cachedRead } from './read-cache.js';

export async function getSetting(db: Db, key: string): Promise<string | undefined> {
  const row = await db('platform_settings').where({ key }).first();
  return row?.value;
}

export async function putSetting(db: Db, key: string, value: string): Promise<void> {
  const updated = await db('platform_settings').where({ key }).update({ value, updated_at: nowIso() });
  if (updated === 0) await db('platform_settings').insert({ key, value, updated_at: nowIso() });
}

/** getSetting through the per-process read cache (store/read-cache.ts): admission's 'draining' check per call. */
export async function getSettingCached(db: Db, key: string): Promise<string | undefined> {
  return cachedRead(db, 'platform_settings', key, () => getSetting(db, key));
}
