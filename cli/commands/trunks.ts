import { networkInterfaces } from 'node:os';
import { insertTrunk, listRoutes, listTrunks, removeTrunk, setTrunkOptions } from '../../store/index.js';
import { checkTrunkNumberFormat } from '../../numbers/index.js';
import { addressMatches, perMinute } from '../../sip/index.js';
import { Flags, UsageError } from '../args.js';
import { type CommandGroup } from '../command.js';

/** Carrier trunks. */
export const trunksCommands: CommandGroup = {
  noun: 'trunks',
  help: `  trunks add --name N --host H [--port 5060] [--transport udp|tcp|tls] [--username U --password P]
             --inbound ADDR[,CIDR...]|none       a carrier: where outbound calls go, where inbound come from
                                                 (none: outbound only; never implied by --host)
             [--ping on|off]                     OPTIONS pings: a trunk that stops answering is skipped
             [--number-format e164|national|prefix:TECH]  how numbers go in its Request-URIs (e164)
  trunks ping NAME on|off                        turn a trunk's OPTIONS pings on or off
  trunks register NAME on|off [--expires 3600]   REGISTER to the carrier with the trunk's username and password
  trunks list                                    health (up, down, unknown: not pinged)
  trunks remove NAME [--force]                   refused while routes use it; --force removes them too`,
  commands: {
    async 'trunks add'(db, args, out) {
      const f = new Flags(args);
      const name = f.string('name', { required: true })!;
      const host = f.string('host', { required: true })!;
      const port = f.int('port', { min: 1, max: 65535 }) ?? 5060;
      const transport = f.string('transport', { default: 'udp' })!;
      const username = f.string('username') ?? null;
      const password = f.string('password') ?? null;
      const ping = onOff(f.string('ping', { default: 'off' })!, '--ping');
      const numberFormat = f.string('number-format') ?? null;
      const inboundFlag = f.string('inbound');
      f.done();
      if (!['udp', 'tcp', 'tls'].includes(transport))
        throw new UsageError(`--transport must be udp, tcp or tls, not ${transport}`);
      if (!/^[A-Za-z0-9._-]+$/.test(host))
        throw new UsageError(`--host must be a host name or address, not ${JSON.stringify(host)}`);
      if ((username === null) !== (password === null)) throw new UsageError('--username and --password go together');
      if (numberFormat !== null) {
        try {
          checkTrunkNumberFormat(numberFormat);
        } catch (e) {
          throw new UsageError(`--number-format: ${(e as Error).message}`);
        }
      }
      // The sources that are this carrier are said explicitly, as with Kamailio's permissions table or FreeSWITCH's
      // ACLs: the address calls go to is often not where they come from, and a host on this box would take every
      // INVITE from it (phones' included) for a carrier call.
      if (inboundFlag === undefined)
        throw new UsageError(
          "--inbound is required: the carrier's signalling addresses or CIDRs (ADDR[,CIDR...]), or --inbound none " +
            'for a trunk that only carries outbound calls',
        );
      const inbound =
        inboundFlag.trim() === 'none'
          ? []
          : inboundFlag
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean);
      if (inbound.length === 0 && inboundFlag.trim() !== 'none')
        throw new UsageError('--inbound takes addresses or CIDR ranges, or none');
      for (const addr of inbound) {
        if (!/^[0-9a-fA-F.:]+(\/\d{1,3})?$/.test(addr))
          throw new UsageError(`--inbound takes addresses or CIDR ranges, not ${addr}`);
      }
      const t = await insertTrunk(db, {
        name,
        host,
        port,
        transport: transport as 'udp',
        username,
        password,
        inbound_addresses: inbound,
        number_format: numberFormat,
        options_ping: ping,
      });
      for (const a of onThisBox(inbound))
        out.warn(
          `inbound ${a} is this box (loopback or one of its addresses): every INVITE from it, phones' included, ` +
            `will be taken as a call from carrier ${t.name}. Give the carrier's own addresses unless it runs here.`,
        );
      const shown = { ...t, password: t.password ? '***' : null };
      const from = t.inbound_addresses.length ? `inbound from ${t.inbound_addresses.join(', ')}` : 'no inbound calls';
      out.print(`trunk ${t.name} -> ${t.transport}:${t.host}:${t.port}, ${from}`, shown);
    },
    async 'trunks list'(db, args, out) {
      new Flags(args).done();
      const rows = (await listTrunks(db)).map((t) => ({ ...t, password: t.password ? '***' : null }));
      out.print(
        rows
          .map(
            (t) =>
              `${t.name.padEnd(16)} ${t.transport}:${t.host}:${t.port}  inbound ${t.inbound_addresses.join(',')}  ` +
              `health ${t.health}${t.options_ping ? '' : ' (not pinged)'}${t.health_changed_at ? ` since ${t.health_changed_at}` : ''}` +
              (t.register ? `  registration ${t.registration}` : '') +
              (t.is_active ? '' : '  INACTIVE'),
          )
          .join('\n') || '(no trunks)',
        rows,
      );
    },
    async 'trunks ping'(db, args, out) {
      new Flags(args).done();
      const [name, value] = args.positional;
      if (!name || value === undefined) throw new UsageError('trunks ping takes NAME and on or off');
      const on = onOff(value, 'the second word');
      if (!(await setTrunkOptions(db, name, { options_ping: on }))) throw new UsageError(`no trunk named ${name}`);
      out.print(`trunk ${name}: OPTIONS pings ${on ? 'on' : 'off'}`, { trunk: name, options_ping: on });
    },
    async 'trunks register'(db, args, out) {
      const f = new Flags(args);
      const expires = f.int('expires', { min: 60, max: 86400 });
      f.done();
      const [name, value] = args.positional;
      if (!name || value === undefined) throw new UsageError('trunks register takes NAME and on or off');
      const on = onOff(value, 'the second word');
      const trunk = (await listTrunks(db)).find((t) => t.name === name);
      if (!trunk) throw new UsageError(`no trunk named ${name}`);
      if (on && !(trunk.username && trunk.password))
        throw new UsageError(`trunk ${name} has no --username and --password to register with`);
      await setTrunkOptions(db, name, {
        register: on,
        ...(expires === undefined ? {} : { register_expires: expires }),
      });
      out.print(`trunk ${name}: upstream registration ${on ? 'on' : 'off'}`, { trunk: name, register: on });
    },
    async 'trunks remove'(db, args, out) {
      const f = new Flags(args);
      const force = f.bool('force');
      f.done();
      const name = args.positional[0];
      if (!name) throw new UsageError('a trunk name is required');
      const trunk = (await listTrunks(db)).find((t) => t.name === name || t.id === name);
      if (!trunk) throw new UsageError(`no trunk named ${name}`);
      // Removing a trunk removes its routes with it; a destination may then have no route left, so it is said.
      const routes = (await listRoutes(db)).filter((r) => r.trunk_id === trunk.id);
      if (routes.length > 0 && !force)
        throw new UsageError(
          [
            `${routes.length} route${routes.length === 1 ? ' uses' : 's use'} trunk ${trunk.name}:`,
            ...routes.map(
              (r) =>
                `  ${(r.prefix || '*').padEnd(16)} priority ${r.priority} weight ${r.weight} buy ${perMinute(r.buy_rate_cents)}  ${r.id}`,
            ),
            `remove them first (routes remove ID), or give --force to remove the trunk and these routes`,
          ].join('\n'),
        );
      await removeTrunk(db, trunk.id);
      const also = routes.length ? ` with its ${routes.length} route${routes.length === 1 ? '' : 's'}` : '';
      out.print(`trunk ${trunk.name} removed${also}`, { removed: trunk.name, routes_removed: routes.length });
    },
  },
};

function onOff(v: string, what: string): boolean {
  if (v === 'on') return true;
  if (v === 'off') return false;
  throw new UsageError(`${what} must be on or off, not ${v}`);
}

/**
 * The inbound sources that cover this box: a loopback address or range, or one that holds an address of its
 * interfaces. A trunk's inbound source is matched before any phone is authenticated (sip/sip-app.ts).
 */
function onThisBox(inbound: readonly string[]): string[] {
  const own = [
    '127.0.0.1',
    '::1',
    ...Object.values(networkInterfaces())
      .flat()
      .flatMap((i) => (i ? [i.address] : [])),
  ];
  return inbound.filter(
    (pattern) => /^127\./.test(pattern) || pattern === '::1' || own.some((a) => addressMatches(pattern, a)),
  );
}
