import type { Db } from './db.js';
import { newId, nowIso } from './ids.js';
import { ConflictError, isUniqueViolation } from './errors.js';

export interface TrunkRow {
  id: string;
  name: string;
  host: string;
  port: number;
  transport: 'udp' | 'tcp' | 'tls';
  username: string | null;
  password: string | null;
  inbound_addresses: string[];
  is_active: boolean;
  created_at: string;
}

const normalise = (r: any): TrunkRow => ({
  ...r,
  is_active: Boolean(r.is_active),
  inbound_addresses: JSON.parse(r.inbound_addresses ?? '[]'),
});

export type NewTrunk = Omit<TrunkRow, 'id' | 'created_at' | 'is_active'>;

export async function insertTrunk(db: Db, t: NewTrunk): Promise<TrunkRow> {
  const row = {
    ...t,
    id: newId(),
    inbound_addresses: JSON.stringify(t.inbound_addresses),
    is_active: true,
    created_at: nowIso(),
  };
  try {
    await db('trunks').insert(row);
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`a trunk named ${t.name} exists already`, 'TRUNK_EXISTS');
    throw e;
  }
  return normalise(await db('trunks').where({ id: row.id }).first());
}

export async function listTrunks(db: Db): Promise<TrunkRow[]> {
  return (await db('trunks').orderBy('name')).map(normalise);
}

export async function removeTrunk(db: Db, nameOrId: string): Promise<boolean> {
  return (await db('trunks').where({ name: nameOrId }).orWhere({ id: nameOrId }).delete()) > 0;
}
