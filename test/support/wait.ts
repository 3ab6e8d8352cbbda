/**
 * Waiting for a condition instead of sleeping a fixed time: a fixed sleep is too short on a loaded box (a flaky
 * test) and too long on an idle one (a slow suite).
 */
import { readFileSync } from 'node:fs';

/**
 * Resolves with the first truthy value `probe` gives, asking every `every` ms; rejects after `ms` with `what`
 * in the message.
 */
export async function eventually<T>(
  probe: () => T | Promise<T>,
  what: string,
  ms = 10000,
  every = 50,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

/** Waits for a promise at most `ms`; what it waited for is named in the error when it takes longer. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether some process holds this port of 127.0.0.1 (UDP bound, or TCP listening), read from /proc/net. */
export function isBound(port: number, transport: 'UDP' | 'TCP' = 'UDP'): boolean {
  const table = readFileSync(transport === 'UDP' ? '/proc/net/udp' : '/proc/net/tcp', 'utf8');
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  // Column 2 is the local address, column 4 the state (0A: LISTEN for TCP, 07: unconnected for UDP).
  return table.split('\n').some((line) => {
    const cols = line.trim().split(/\s+/);
    return cols[1] === local && cols[3] === (transport === 'UDP' ? '07' : '0A');
  });
}

/**
 * Resolves once a peer started in the background (SIPp) has bound its port on 127.0.0.1. It only reads
 * /proc/net: a probe that bound the port itself could take it from the peer in the same instant.
 */
export async function waitForBound(port: number, transport: 'UDP' | 'TCP' = 'UDP', ms = 10000): Promise<void> {
  await eventually(() => isBound(port, transport), `${transport} port ${port} to be bound`, ms, 20);
}

/**
 * How many TCP connections accepted on `port` of 127.0.0.1 are still held open by this box's side (ESTABLISHED,
 * or CLOSE_WAIT: the peer closed, the owner has not yet), read from /proc/net/tcp.
 */
export function openTcpConnections(port: number): number {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .filter((line) => {
      const cols = line.trim().split(/\s+/);
      return cols[1] === local && (cols[3] === '01' || cols[3] === '08');
    }).length;
}
