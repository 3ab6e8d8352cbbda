import type { Db } from './db.js';
import { nowIso } from './ids.js';

export async function getSetting(db: Db, key: string): Promise<string | undefined> {
  const row = await db('platform_settings').where({ key }).first();
  return row?.value;
}

export async function putSetting(db: Db, key: string, value: string): Promise<void> {
  const updated = await db('platform_settings').where({ key }).update({ value, updated_at: nowIso() });
  if (updated === 0) await db('platform_settings').insert({ key, value, updated_at: nowIso() });
}
