import { quietLogger } from '../../support/logger.js';
import { SecurityGate, type SecurityGateOptions } from '../../../sip/security/index.js';
import { ManualClock } from '../../../kit/index.js';

export const silentLogger = quietLogger;

/** Where the security tests' ManualClock (the kit's one fake clock) starts. */
export const SECURITY_EPOCH = Date.UTC(2026, 0, 1);

export function makeGate(opts: SecurityGateOptions = {}): { gate: SecurityGate; clock: ManualClock } {
  const clock = (opts.clock as ManualClock | undefined) ?? new ManualClock(SECURITY_EPOCH);
  const gate = new SecurityGate({ logger: silentLogger, ...opts, clock });
  return { gate, clock };
}

export const req = (source: string, over: { userAgent?: string; method?: string; transport?: string } = {}) => ({
  source,
  transport: over.transport ?? 'udp',
  method: over.method ?? 'OPTIONS',
  userAgent: over.userAgent ?? 'Zoiper rv2.10',
});
