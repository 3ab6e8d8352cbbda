import type { Db } from './db.js';
import { newId, nowIso } from './ids.js';
import { ConflictError, isUniqueViolation } from './errors.js';
import { getSetting, putSetting } from './platform.js';
import { insertRows, runSqlCount, selectRows } from './fixed-sql.js';

/** One row of the routing table: destinations under `prefix` may be carried by `trunk_id`. */
export interface RouteRow {
  id: string;
  /** Digits of the E.164 number without '+' ('' is the catch-all), or a word such as `emergency`. */
  prefix: string;
  trunk_id: string;
  trunk_name: string;
  /** Lower is tried first. */
  priority: number;
  /** Share of the calls among routes of the same prefix and priority. */
  weight: number;
  /** What the carrier charges per minute, in cents (KES), like the sell rates in `rates`. */
  buy_rate_cents: number;
  created_at: string;
}

export type NewRoute = Pick<RouteRow, 'prefix' | 'trunk_id' | 'priority' | 'weight' | 'buy_rate_cents'>;

/** Bumped on every change of the routes table, so a running switch reloads its table only when it changed. */
export const ROUTES_VERSION_KEY = 'routes_version';

const normalise = (r: any): RouteRow => ({
  id: r.id,
  prefix: r.prefix,
  trunk_id: r.trunk_id,
  trunk_name: r.trunk_name,
  priority: Number(r.priority),
  weight: Number(r.weight),
  buy_rate_cents: Number(r.buy_rate_cents),
  created_at: r.created_at,
});

async function bumpVersion(db: Db): Promise<void> {
  await putSetting(db, ROUTES_VERSION_KEY, `${Date.now()}-${newId()}`);
}

/** The version of the routes table (changes whenever a route is added or removed); '' before any change. */
export async function routesVersion(db: Db): Promise<string> {
  return (await getSetting(db, ROUTES_VERSION_KEY)) ?? '';
}

export async function insertRoute(db: Db, r: NewRoute): Promise<RouteRow> {
  const id = newId();
  try {
    await insertRows(db, 'routes', [{ ...r, id, created_at: nowIso() }]);
  } catch (e) {
    if (isUniqueViolation(e))
      throw new ConflictError(`a route for ${r.prefix || '(any)'} on that trunk exists already`, 'ROUTE_EXISTS');
    throw e;
  }
  await bumpVersion(db);
  const [row] = await selectRows(db, `${SELECT_ROUTES} where "r"."id" = ?`, [id]);
  return normalise(row);
}

const SELECT_ROUTES =
  'select "r".*, "t"."name" as "trunk_name" from "routes" as "r" inner join "trunks" as "t" on "t"."id" = "r"."trunk_id"';
const ROUTES_ORDER = ' order by "r"."prefix" asc, "r"."priority" asc, "t"."name" asc';

/** Every route with its trunk's name, by prefix then priority. */
export async function listRoutes(db: Db): Promise<RouteRow[]> {
  return (await selectRows(db, SELECT_ROUTES + ROUTES_ORDER, [])).map(normalise);
}

/** Removes one route by id, or every route of `prefix` (optionally only on the trunk named `trunkName`). */
export async function removeRoutes(db: Db, idOrPrefix: string, trunkName?: string): Promise<number> {
  const n =
    trunkName === undefined
      ? await runSqlCount(db, 'delete from "routes" where "id" = ? or "prefix" = ?', [idOrPrefix, idOrPrefix], 'routes')
      : await runSqlCount(
          db,
          'delete from "routes" where "prefix" = ? and "trunk_id" in (select "id" from "trunks" where "name" = ?)',
          [idOrPrefix, trunkName],
          'routes',
        );
  if (n > 0) await bumpVersion(db);
  return n;
}

/** Deletes the routes of a trunk (before the trunk itself is removed). */
export async function removeRoutesOfTrunk(db: Db, trunkId: string): Promise<void> {
  if ((await runSqlCount(db, 'delete from "routes" where "trunk_id" = ?', [trunkId], 'routes')) > 0)
    await bumpVersion(db);
}
