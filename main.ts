/**
 * `npm start`: the switch in one process. scripts/setup.sh has installed packages; this loads and checks the
 * config, migrates the store, creates the demo account on the very first run, then starts the rooms
 * (rtpengine supervisor, HTTP API and event stream, SIP transports) and stops them in reverse on SIGINT/SIGTERM.
 */
import { loadConfig, ConfigError, setLogLevel, roomLogger } from './config/index.js';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Switch } from './switch.js';
import { PID_FILE, removeOwnPidFile, requestedDrainSeconds } from './cli/index.js';

const log = roomLogger('main');

let config;
try {
  config = loadConfig();
} catch (e) {
  if (e instanceof ConfigError) {
    process.stderr.write(`simu: ${e.message}\n`);
    process.exit(2);
  }
  throw e;
}
setLogLevel(config.logLevel);

const sw = new Switch(config);
const pidFile = path.join(config.dataDir, PID_FILE);
let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.warn({ signal, live: sw.calls?.liveCount ?? 0 }, 'stopping');
  sw.stop().then(
    () => {
      removeOwnPidFile(pidFile);
      process.exit(0);
    },
    (e) => {
      log.error({ err: e }, 'error while stopping');
      removeOwnPidFile(pidFile);
      process.exit(1);
    },
  );
};
/**
 * SIGTERM drains (new calls refused, health 503) and stops once the calls have ended or the drain time is up, the
 * rest then ended with BYE; a second SIGTERM, or SIGINT, stops at once.
 */
const drainThenStop = () => {
  if (sw.draining) return stop('SIGTERM');
  const seconds = requestedDrainSeconds(config.dataDir) ?? config.drain.seconds;
  log.warn({ seconds, live: sw.calls?.liveCount ?? 0 }, 'draining: new calls refused, stopping when calls end');
  void sw.drain(seconds * 1000).then((left) => {
    if (left > 0) log.warn({ left }, 'drain time is up: ending the calls still up');
    stop('SIGTERM');
  });
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', drainThenStop);
/** SIGHUP (systemctl reload): the configuration read again; what cannot change live is named and kept. */
process.on('SIGHUP', () => {
  try {
    const { applied, refused } = sw.reload(loadConfig());
    if (refused.length > 0)
      log.warn({ refused }, 'reload: these settings change only with a restart; kept as they were');
    log.warn({ applied }, 'configuration reloaded');
  } catch (e) {
    log.error({ err: (e as Error).message }, 'reload refused: the configuration was kept as it was');
  }
});

try {
  const banner = await sw.start();
  writeFileSync(pidFile, `${process.pid}\n`);
  process.stdout.write(banner + '\n');
} catch (e) {
  process.stderr.write(`simu: could not start: ${(e as Error).message}\n`);
  await sw.stop().catch(() => undefined);
  process.exit(1);
}
