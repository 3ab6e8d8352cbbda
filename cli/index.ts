export { runCli } from './main.js';
export { presentAccount } from './command.js';
export { COMMAND_NAMES, COMMAND_GROUPS, usageText } from './registry.js';
export { firstRun, firstRunMessage, loadServerSecret, type FirstRunResult } from './first-run.js';
export { PID_FILE, removeOwnPidFile, requestedDrainSeconds, runningSwitchPid } from './node-control.js';
