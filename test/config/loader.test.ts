import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, ConfigError, configTable, SETTINGS } from '../../config/index.js';

describe('config loader', () => {
  it('gives the documented defaults with an empty environment', () => {
    const cfg = loadConfig({}, '/tmp');
    assert.equal(cfg.http.port, 8080);
    assert.equal(cfg.sip.port, 5060);
    assert.equal(cfg.dataDir, '/tmp/data');
    assert.equal(cfg.databaseUrl, '');
    assert.equal(cfg.publicBaseUrl, 'http://127.0.0.1:8080');
    assert.deepEqual(cfg.ice.servers, []);
  });

  it('takes SIMU_* environment overrides', () => {
    const cfg = loadConfig(
      { SIMU_HTTP_PORT: '9090', SIMU_DATA_DIR: '/var/simu', SIMU_RTPENGINE_URLS: 'a:1, b:2' },
      '/',
    );
    assert.equal(cfg.http.port, 9090);
    assert.equal(cfg.dataDir, '/var/simu');
    assert.deepEqual(cfg.rtpengine.urls, ['a:1', 'b:2']);
  });

  it('names the key, the value and the expected form of a bad value', () => {
    assert.throws(
      () => loadConfig({ SIMU_SIP_PORT: 'fifty' }, '/'),
      (e: unknown) =>
        e instanceof ConfigError &&
        /sip\.port \(SIMU_SIP_PORT\) = "fifty" is not valid: expected a port number from 1 to 65535/.test(e.message),
    );
    assert.throws(() => loadConfig({ SIMU_DATABASE_URL: 'not a url' }, '/'), /databaseUrl.*absolute URL/);
    assert.throws(() => loadConfig({ SIMU_LOG_LEVEL: 'loud' }, '/'), /logLevel.*one of fatal/);
  });

  it('reads a JSON file, with the environment winning over it, and refuses unknown keys', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-cfg-'));
    const file = path.join(dir, 'c.json');
    writeFileSync(file, JSON.stringify({ http: { port: 7000 }, sip: { port: 7060 } }));
    const cfg = loadConfig({ SIMU_CONFIG: file, SIMU_SIP_PORT: '7070' }, dir);
    assert.equal(cfg.http.port, 7000);
    assert.equal(cfg.sip.port, 7070);
    writeFileSync(file, JSON.stringify({ htp: { port: 1 } }));
    assert.throws(() => loadConfig({ SIMU_CONFIG: file }, dir), /htp\.port.*known setting/);
  });

  it('documents every setting in the configuration table', () => {
    const table = configTable();
    for (const s of SETTINGS) assert.ok(table.includes(s.env), s.env);
  });
});
