export { runCli } from './main.js';
export { registerCommand, presentAccount } from './commands.js';
