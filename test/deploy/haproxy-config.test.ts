import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const CONFIG = path.resolve(import.meta.dirname, '../../deploy/haproxy/haproxy.cfg');

/** The environment the config reads its addresses from (README, "From one box to several"). */
const ADDRESSES = {
  SIMU_HTTP_BIND: '127.0.0.1:18080',
  SIMU_NODE_A: '127.0.0.1:18081',
  SIMU_NODE_B: '127.0.0.1:18082',
  SIMU_NODE_C: '127.0.0.1:18083',
};

describe('deploy: the HAProxy front', () => {
  it('is a configuration HAProxy accepts, with the node addresses from the environment', () => {
    const r = spawnSync('haproxy', ['-c', '-f', CONFIG], { env: { ...process.env, ...ADDRESSES }, encoding: 'utf8' });
    assert.equal(r.status, 0, `haproxy -c refused deploy/haproxy/haproxy.cfg:\n${r.stdout}${r.stderr}`);
  });

  it('health-checks every node on /api/health/ and sticks no path to a node', () => {
    const r = spawnSync('haproxy', ['-c', '-f', CONFIG], { env: { ...process.env }, encoding: 'utf8' });
    assert.notEqual(r.status, 0, 'without the node addresses the configuration is refused, not run half-set');
    const text = readFileSync(CONFIG, 'utf8');
    assert.match(text, /option httpchk GET \/api\/health\//);
    assert.doesNotMatch(text, /^\s*cookie /m, 'sessions live in the store: no sticky cookie');
  });
});
