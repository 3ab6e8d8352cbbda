export { runCli } from './main.js';
export { registerCommand, presentAccount } from './commands.js';
export { firstRun, firstRunMessage, loadServerSecret, type FirstRunResult } from './first-run.js';
