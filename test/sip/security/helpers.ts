import { quietLogger } from '../../support/logger.js';
import { SecurityGate, type SecurityGateOptions } from '../../../sip/security/index.js';
import { FakeClock } from './fake-clock.js';

export const silentLogger = quietLogger;

export function makeGate(opts: SecurityGateOptions = {}): { gate: SecurityGate; clock: FakeClock } {
  const clock = (opts.clock as FakeClock | undefined) ?? new FakeClock();
  const gate = new SecurityGate({ logger: silentLogger, ...opts, clock });
  return { gate, clock };
}

export const req = (source: string, over: { userAgent?: string; method?: string; transport?: string } = {}) => ({
  source,
  transport: over.transport ?? 'udp',
  method: over.method ?? 'OPTIONS',
  userAgent: over.userAgent ?? 'Zoiper rv2.10',
});
