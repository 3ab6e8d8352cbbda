import { loadConfig } from '../../config/index.js';
import { formatMoney, CURRENCY } from '../../billing/index.js';
import { EMERGENCY_PREFIX, perMinute, TrunkDirectory } from '../../sip/index.js';
import { insertRoute, listRoutes, listTrunks, removeRoutes, type RouteRow } from '../../store/index.js';
import { Flags, UsageError } from '../args.js';
import { money, type CommandGroup } from '../command.js';

const presentRoute = (r: RouteRow) => ({
  id: r.id,
  prefix: r.prefix,
  trunk: r.trunk_name,
  priority: r.priority,
  weight: r.weight,
  buy_rate: formatMoney(r.buy_rate_cents),
  currency: CURRENCY,
});

/** The routes table: which trunks carry which destinations, in what order, at what buy rate (docs/routing.md). */
export const routesCommands: CommandGroup = {
  noun: 'routes',
  help: `  routes add PREFIX TRUNK --buy AMOUNT [--priority 0] [--weight 1]
                                                 PREFIX: E.164 digits without + ('' or * for any), or emergency;
                                                 AMOUNT: what the carrier charges per minute
  routes list | routes remove ID|PREFIX [--trunk NAME]
  routes test NUMBER                             the order NUMBER would be tried in, and why`,
  commands: {
    async 'routes add'(db, args, out) {
      const f = new Flags(args);
      const priority = f.int('priority', { min: 0, max: 1000 }) ?? 0;
      const weight = f.int('weight', { min: 0, max: 1000 }) ?? 1;
      const buy = money(f.string('buy', { required: true }), '--buy');
      f.done();
      const [rawPrefix, trunkName] = args.positional;
      if (rawPrefix === undefined || !trunkName) throw new UsageError('routes add takes PREFIX and TRUNK');
      const prefix = rawPrefix === '*' ? '' : rawPrefix.replace(/^\+/, '');
      if (prefix !== EMERGENCY_PREFIX && !/^\d{0,15}$/.test(prefix))
        throw new UsageError(
          `PREFIX takes up to 15 digits of the E.164 number or ${EMERGENCY_PREFIX}, not ${rawPrefix}`,
        );
      const trunk = (await listTrunks(db)).find((t) => t.name === trunkName);
      if (!trunk) throw new UsageError(`no trunk named ${trunkName}`);
      const r = await insertRoute(db, { prefix, trunk_id: trunk.id, priority, weight, buy_rate_cents: buy });
      out.print(
        `route ${r.prefix || '*'} -> ${r.trunk_name} (priority ${r.priority}, weight ${r.weight}, buy ${perMinute(r.buy_rate_cents)}) ${r.id}`,
        presentRoute(r),
      );
    },
    async 'routes list'(db, args, out) {
      new Flags(args).done();
      const rows = (await listRoutes(db)).map(presentRoute);
      out.print(
        rows
          .map(
            (r) =>
              `${(r.prefix || '*').padEnd(16)} ${r.trunk.padEnd(16)} priority ${String(r.priority).padEnd(4)} weight ${String(r.weight).padEnd(4)} buy ${r.buy_rate} ${CURRENCY}/min  ${r.id}`,
          )
          .join('\n') || '(no routes: outbound calls go to the first active trunk)',
        rows,
      );
    },
    async 'routes remove'(db, args, out) {
      const f = new Flags(args);
      const trunk = f.string('trunk');
      f.done();
      const which = args.positional[0];
      if (which === undefined) throw new UsageError('routes remove takes a route id or a PREFIX');
      const key = which === '*' ? '' : which.replace(/^\+/, '');
      const n = await removeRoutes(db, key, trunk);
      if (n === 0) throw new UsageError(`no route ${which}${trunk ? ` on ${trunk}` : ''}`);
      out.print(`${n} route(s) removed`, { removed: n });
    },
    async 'routes test'(db, args, out) {
      new Flags(args).done();
      const number = args.positional[0];
      if (!number) throw new UsageError('routes test takes a NUMBER (E.164) or emergency');
      const emergency = number === EMERGENCY_PREFIX;
      if (!emergency && !/^\+?\d{1,15}$/.test(number)) throw new UsageError(`NUMBER must be E.164, not ${number}`);
      const trunks = await listTrunks(db);
      const down = new Set(trunks.filter((t) => t.health === 'down').map((t) => t.id));
      // The switch's own view of health is its memory; here the last state it stored (`trunks list`).
      const directory = new TrunkDirectory(db, {
        allowLossMaking: loadConfig().routing.allowLossMaking,
        health: { isUp: (id) => !down.has(id) },
      });
      const plan = await directory.outboundPlan(number, { emergency });
      const tried = plan.targets.map((t, i) => ({ order: i + 1, trunk: t.trunk.name, why: t.why }));
      const skipped = plan.skipped.map((s) => ({ prefix: s.route.prefix, trunk: s.route.trunk_name, why: s.why }));
      const sell = plan.sellRateCents === undefined ? 'none' : perMinute(plan.sellRateCents);
      const lines = [
        `${number}: sell rate ${sell}`,
        ...tried.map((t) => `  ${t.order}. ${t.trunk.padEnd(16)} ${t.why}`),
        ...skipped.map((s) => `  -  ${s.trunk.padEnd(16)} skipped (prefix '${s.prefix}'): ${s.why}`),
      ];
      if (tried.length === 0) lines.push('  no trunk can carry it: the call would fail (END.0500)');
      const sellRate = plan.sellRateCents === undefined ? null : formatMoney(plan.sellRateCents);
      out.print(lines.join('\n'), { number, sellRate, currency: CURRENCY, tried, skipped });
    },
  },
};
