import type { Db } from './db.js';
import { newId, nowIso } from './ids.js';
import { ConflictError, isUniqueViolation } from './errors.js';
import { removeRoutesOfTrunk } from './routes.js';
import { firstRow, insertRows, runSqlCount, selectRows, updateRowCount } from './fixed-sql.js';

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
  /** Whether the switch pings the carrier with OPTIONS and skips it while it does not answer. */
  options_ping: boolean;
  /** The last health the switch saw: `unknown` (not pinged), `up` or `down`. */
  health: TrunkHealthState;
  health_changed_at: string | null;
  /** Whether the switch registers to the carrier (REGISTER with the trunk's username and password). */
  register: boolean;
  register_expires: number;
  registration: TrunkRegistrationState;
  registration_changed_at: string | null;
  /** The form numbers take in this trunk's Request-URIs: null or `e164`, `national`, `prefix:<tech prefix>`. */
  number_format?: string | null;
}

export type TrunkHealthState = 'unknown' | 'up' | 'down';
export type TrunkRegistrationState = 'none' | 'registering' | 'registered' | 'failed';

const normalise = (r: any): TrunkRow => ({
  ...r,
  port: Number(r.port),
  is_active: Boolean(r.is_active),
  options_ping: Boolean(r.options_ping),
  register: Boolean(r.register),
  register_expires: Number(r.register_expires ?? 3600),
  health: r.health ?? 'unknown',
  registration: r.registration ?? 'none',
  inbound_addresses: JSON.parse(r.inbound_addresses ?? '[]'),
});

export type NewTrunk = Omit<
  TrunkRow,
  | 'id'
  | 'created_at'
  | 'is_active'
  | 'options_ping'
  | 'health'
  | 'health_changed_at'
  | 'register'
  | 'register_expires'
  | 'registration'
  | 'registration_changed_at'
> &
  Partial<Pick<TrunkRow, 'options_ping' | 'register' | 'register_expires'>>;

export async function insertTrunk(db: Db, t: NewTrunk): Promise<TrunkRow> {
  const row = {
    ...t,
    id: newId(),
    inbound_addresses: JSON.stringify(t.inbound_addresses),
    is_active: true,
    created_at: nowIso(),
  };
  try {
    await insertRows(db, 'trunks', [row]);
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`a trunk named ${t.name} exists already`, 'TRUNK_EXISTS');
    throw e;
  }
  return normalise(await firstRow(db, 'select * from "trunks" where "id" = ? limit 1', [row.id]));
}

export async function listTrunks(db: Db): Promise<TrunkRow[]> {
  return (await selectRows(db, 'select * from "trunks" order by "name" asc', [])).map(normalise);
}

export async function removeTrunk(db: Db, nameOrId: string): Promise<boolean> {
  const trunk = await firstRow(db, 'select "id" from "trunks" where "name" = ? or "id" = ? limit 1', [
    nameOrId,
    nameOrId,
  ]);
  if (!trunk) return false;
  await removeRoutesOfTrunk(db, trunk.id as string);
  return (await runSqlCount(db, 'delete from "trunks" where "id" = ?', [trunk.id], 'trunks')) > 0;
}

/** Turns a trunk's OPTIONS pings or upstream registration on or off. */
export async function setTrunkOptions(
  db: Db,
  name: string,
  o: Partial<Pick<TrunkRow, 'options_ping' | 'register' | 'register_expires'>>,
): Promise<boolean> {
  return (await updateRowCount(db, 'trunks', { column: 'name', value: name }, o)) > 0;
}

/** Records the health the switch saw (written on change only). */
export async function setTrunkHealth(db: Db, id: string, health: TrunkHealthState): Promise<void> {
  await updateRowCount(db, 'trunks', { column: 'id', value: id }, { health, health_changed_at: nowIso() });
}

/** Records the state of the trunk's upstream registration (written on change only). */
export async function setTrunkRegistration(db: Db, id: string, registration: TrunkRegistrationState): Promise<void> {
  await updateRowCount(db, 'trunks', { column: 'id', value: id }, { registration, registration_changed_at: nowIso() });
}
