import { insertTrunk, listTrunks, removeTrunk, setTrunkOptions } from '../../store/index.js';
import { checkTrunkNumberFormat } from '../../numbers/index.js';
import { Flags, UsageError } from '../args.js';
import { type CommandGroup } from '../command.js';

/** Carrier trunks. */
export const trunksCommands: CommandGroup = {
  noun: 'trunks',
  help: `  trunks add --name N --host H [--port 5060] [--transport udp|tcp|tls] [--username U --password P]
             [--inbound ADDR[,CIDR...]]          a carrier: where outbound calls go, where inbound come from
             [--ping on|off]                     OPTIONS pings: a trunk that stops answering is skipped
             [--number-format e164|national|prefix:TECH]  how numbers go in its Request-URIs (e164)
  trunks ping NAME on|off                        turn a trunk's OPTIONS pings on or off
  trunks register NAME on|off [--expires 3600]   REGISTER to the carrier with the trunk's username and password
  trunks list | trunks remove NAME               list shows health (up, down, unknown: not pinged)`,
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
      const inbound = (f.string('inbound') ?? host)
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
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
      const shown = { ...t, password: t.password ? '***' : null };
      out.print(
        `trunk ${t.name} -> ${t.transport}:${t.host}:${t.port}, inbound from ${t.inbound_addresses.join(', ')}`,
        shown,
      );
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
      new Flags(args).done();
      const name = args.positional[0];
      if (!name) throw new UsageError('a trunk name is required');
      if (!(await removeTrunk(db, name))) throw new UsageError(`no trunk named ${name}`);
      out.print(`trunk ${name} removed`, { removed: name });
    },
  },
};

function onOff(v: string, what: string): boolean {
  if (v === 'on') return true;
  if (v === 'off') return false;
  throw new UsageError(`${what} must be on or off, not ${v}`);
}
