export { loadConfig, configTable, parseHepUrl, type Config } from './loader.js';
export { ConfigError } from './errors.js';
export { SETTINGS, DEFAULT_COUNTRY } from './schema.js';
export { roomLogger, setLogLevel, type Logger } from './logger.js';
