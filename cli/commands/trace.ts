import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../../config/index.js';
import { sipTraceToken, writePcap } from '../../sip/index.js';
import { Flags, UsageError } from '../args.js';
import type { CommandGroup } from '../command.js';

/** One message as GET /console/api/calls/{id}/sip gives it. */
interface LadderMessage {
  at: string;
  at_us: number;
  direction: 'in' | 'out';
  transport: string;
  src: { address: string; port: number };
  dst: { address: string; port: number };
  first_line: string;
  base64: string;
}

/** Where this box's switch serves HTTP: its listening address, or loopback when it listens on every address. */
function switchBaseUrl(config: Config): string {
  const h = config.http.host;
  const host = h === '0.0.0.0' || h === '' ? '127.0.0.1' : h === '::' ? '[::1]' : h.includes(':') ? `[${h}]` : h;
  return `http://${host}:${config.http.port}`;
}

/**
 * A call's SIP messages, read from the switch that carried it (it keeps them in memory: capture.ladderMessages,
 * capture.ladderMinutes), with the token derived from the data directory's server secret.
 */
async function fetchLadder(config: Config, call: string): Promise<LadderMessage[]> {
  const secretFile = path.join(config.dataDir, 'server-secret');
  if (!existsSync(secretFile)) throw new UsageError(`no switch has run on ${config.dataDir} (no server secret there)`);
  const token = sipTraceToken(readFileSync(secretFile, 'utf8').trim());
  const url = `${switchBaseUrl(config)}/console/api/calls/${encodeURIComponent(call)}/sip`;
  let res: Response;
  try {
    res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
  } catch (e) {
    throw new UsageError(
      `no switch answers at ${switchBaseUrl(config)} (${(e as Error).message}); SIP traces are read from the running switch`,
    );
  }
  const body = (await res.json().catch(() => ({}))) as { messages?: LadderMessage[]; detail?: string };
  if (res.status === 404 && body.detail) throw new UsageError(`call ${call}: ${body.detail}`);
  if (!res.ok || !Array.isArray(body.messages))
    throw new UsageError(`the switch refused the trace (HTTP ${res.status}${body.detail ? `: ${body.detail}` : ''})`);
  return body.messages;
}

const endpoint = (e: { address: string; port: number }) =>
  e.address.includes(':') ? `[${e.address}]:${e.port}` : `${e.address}:${e.port}`;

/** A call's SIP ladder from the running switch, as text or as a pcap file. */
export const traceCommands: CommandGroup = {
  noun: 'trace',
  help: `  trace CALL [--pcap FILE]                       a call's SIP messages (by sid or uuid, its legs' too) from the
                                                 running switch's memory; --pcap writes them for Wireshark`,
  commands: {},
  offline: {
    async trace(config, args, out) {
      const f = new Flags(args);
      const pcap = f.string('pcap');
      f.done();
      const [call, extra] = args.positional;
      if (!call) throw new UsageError('a call sid or uuid is required');
      if (extra !== undefined) throw new UsageError(`one call only, not also ${JSON.stringify(extra)}`);
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(call))
        throw new UsageError(`${JSON.stringify(call)} is not a call sid or uuid`);
      const messages = await fetchLadder(config, call);
      if (pcap !== undefined) {
        const file = path.resolve(pcap);
        writeFileSync(
          file,
          writePcap(
            messages.map((m) => ({
              at: m.at_us / 1000,
              srcAddress: m.src.address,
              srcPort: m.src.port,
              dstAddress: m.dst.address,
              dstPort: m.dst.port,
              data: Buffer.from(m.base64, 'base64'),
            })),
          ),
        );
        out.print(`${messages.length} SIP messages of ${call} written to ${file}`, {
          call,
          messages: messages.length,
          pcap: file,
        });
        return;
      }
      const lines = messages.map(
        (m) =>
          `${m.at.slice(11, 23)}  ${endpoint(m.src).padEnd(21)} -> ${endpoint(m.dst).padEnd(21)} ${m.transport.padEnd(3)}  ${m.first_line}`,
      );
      out.print(lines.join('\n') || `no SIP messages kept for ${call}`, { call, messages });
    },
  },
};
