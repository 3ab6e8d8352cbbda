import { listNodes } from '../../store/index.js';
import { Flags } from '../args.js';
import type { CommandGroup } from '../command.js';

/** The switch processes sharing this store, as their heartbeats show them. */
export const nodesCommands: CommandGroup = {
  noun: 'nodes',
  help: `  nodes                                          the switch nodes on this store: state, live calls, version,
                                                 last heartbeat (a node silent past node.goneAfterSeconds is gone)`,
  commands: {
    async nodes(db, args, out) {
      new Flags(args).done();
      const rows = await listNodes(db);
      const now = Date.now();
      const lines = rows.map((n) => {
        const silent = Math.max(0, Math.round((now - Date.parse(n.heartbeat_at)) / 1000));
        const state = n.state === 'gone' ? `gone (closed by ${n.gone_by ?? '?'} at ${n.gone_at})` : n.state;
        return `${n.id.padEnd(20)} ${state.padEnd(10)} ${String(n.live_calls).padStart(5)} calls  v${n.version}  sip ${n.sip_address}  http ${n.http_address}  pid ${n.pid}  heartbeat ${silent} s ago`;
      });
      out.print(lines.join('\n') || '(no node has started on this store)', rows);
    },
  },
};
