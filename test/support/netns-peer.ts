import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Whether a test may run baresip in a network namespace here (root, baresip and unshare installed). */
export const namespacePeersUsable =
  process.getuid?.() === 0 &&
  spawnSync('which', ['baresip']).status === 0 &&
  spawnSync('which', ['unshare']).status === 0;

/**
 * Runs the TypeScript `peer` inside a private network namespace with lo up and a veth pair v0 (10.77.0.1) / v1
 * (10.77.0.2): baresip will not start on `lo` alone (it needs an interface with an address). The peer prints its
 * report as the last line of stdout, parsed as JSON. The child is kept in `children` while it runs (to be killed
 * by PID in an after hook).
 */
export function runNamespacePeer<T>(
  peer: string,
  env: Record<string, string>,
  children: Set<ChildProcess>,
): Promise<T> {
  const script = [
    'set -e',
    'ip link set lo up',
    'ip link add v0 type veth peer name v1',
    'ip addr add 10.77.0.1/24 dev v0; ip addr add 10.77.0.2/24 dev v1',
    'ip link set v0 up; ip link set v1 up',
    `exec node --import tsx ${peer}`,
  ].join('\n');
  const child = spawn('unshare', ['-n', 'bash', '-c', script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (err += String(d)));
  return new Promise((resolve, reject) =>
    child.on('exit', () => {
      children.delete(child);
      const line = out.trim().split('\n').at(-1) ?? '';
      try {
        resolve(JSON.parse(line) as T);
      } catch {
        reject(new Error(`peer printed no report: ${out.slice(-1000)} ${err.slice(-2000)}`));
      }
    }),
  );
}

/**
 * For a describe block of a namespace test: the peer file `name` beside the test file (`testUrl`, its
 * import.meta.url), run by the returned function with `env` as runNamespacePeer does; an after hook of the block kills
 * by PID whatever still runs.
 */
export function namespacePeer<T>(testUrl: string, name: string): (env?: Record<string, string>) => Promise<T> {
  const peer = path.join(path.dirname(fileURLToPath(testUrl)), name);
  const children = new Set<ChildProcess>();
  after(() => {
    for (const c of children) if (c.pid) process.kill(c.pid, 'SIGKILL');
  });
  return (env = {}) => runNamespacePeer<T>(peer, env, children);
}
