/**
 * SIPp as a real peer of the stack's interop tests: the scenarios, ports and client arguments they share. The
 * runner itself (spawn, per-run ports, bounded time, kill) is test/support/sipp.ts, the one the e2e tests use too.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { nextPort, nextPorts } from '../../support/ports.js';

export const SCENARIOS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'scenarios');

/** A signalling port for a SIPp peer (UDP and TCP), from this run's block (test/support/ports.ts). */
export const peerPort = (): number => nextPort();

/** A media base for SIPp (-mp): SIPp binds audio and video RTP and RTCP at base..base+3, all four from the block. */
export const mediaPort = (): number => nextPorts(4);

export { waitForBound } from '../../support/wait.js';
export { SippPeers, type SippResult } from '../../support/sipp.js';

/** Common client arguments: target, local signalling and media ports, bounded run. */
export function clientArgs(target: string, transport: 'UDP' | 'TCP', calls = 1): string[] {
  return [
    target,
    '-i',
    '127.0.0.1',
    '-p',
    String(peerPort()),
    '-mp',
    String(mediaPort()),
    '-m',
    String(calls),
    '-timeout',
    '20s',
    '-recv_timeout',
    '8000',
    ...(transport === 'TCP' ? ['-t', 't1'] : []),
  ];
}
