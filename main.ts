/**
 * `npm start`: the switch in one process. scripts/setup.sh has installed packages; this loads and checks the
 * config, migrates the store, creates the demo account on the very first run, then starts the rooms
 * (rtpengine supervisor, HTTP API and event stream, SIP transports) and stops them in reverse on SIGINT/SIGTERM.
 */
import { loadConfig, ConfigError, setLogLevel, roomLogger } from './config/index.js';
import { Switch } from './switch.js';

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
let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.warn({ signal }, 'stopping');
  sw.stop().then(
    () => process.exit(0),
    (e) => {
      log.error({ err: e }, 'error while stopping');
      process.exit(1);
    },
  );
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));

try {
  const banner = await sw.start();
  process.stdout.write(banner + '\n');
} catch (e) {
  process.stderr.write(`simu: could not start: ${(e as Error).message}\n`);
  await sw.stop().catch(() => undefined);
  process.exit(1);
}
