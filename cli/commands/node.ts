import { Flags, UsageError } from '../args.js';
import type { CommandGroup } from '../command.js';
import { requestDrainSeconds, runningSwitchPid } from '../node-control.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** This box's switch, as the operator steps it out of service (a deploy, a reboot). */
export const nodeCommands: CommandGroup = {
  noun: 'node',
  help: `  node drain [--timeout SECONDS] [--wait]        refuse new calls on this box's switch, stop when its calls end
                                                 (at most --timeout, then the rest are ended); --wait until it exits`,
  commands: {},
  offline: {
    async 'node drain'(config, args, out) {
      const f = new Flags(args);
      const timeout = f.int('timeout', { min: 0, max: 86400 });
      const wait = f.bool('wait');
      f.done();
      const pid = runningSwitchPid(config.dataDir);
      if (pid === undefined) throw new UsageError(`no switch is running on ${config.dataDir}`);
      if (timeout !== undefined) requestDrainSeconds(config.dataDir, timeout);
      process.kill(pid, 'SIGTERM');
      const seconds = timeout ?? config.drain.seconds;
      if (!wait) {
        out.print(`switch ${pid} draining: it stops when its calls end, within ${seconds} s`, { pid, seconds });
        return;
      }
      // Its own deadline, then the time it takes to end the rest and stop its rooms.
      const deadline = Date.now() + (seconds + 30) * 1000;
      while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      if (alive(pid)) throw new UsageError(`switch ${pid} is still running ${seconds + 30} s after the drain began`);
      out.print(`switch ${pid} drained and stopped`, { pid, seconds, stopped: true });
    },
  },
};
