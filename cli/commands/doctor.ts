import { Flags } from '../args.js';
import type { CommandGroup } from '../command.js';
import { diagnose } from '../doctor.js';

/** A failed check: the command exits 2 after printing every finding. */
class DoctorFailed extends Error {
  readonly code = 'DOCTOR_FAILED';
}

/** What operators get wrong on a new box, and how to fix it. */
export const doctorCommands: CommandGroup = {
  noun: 'doctor',
  help: `  doctor                                         check this box for the switch: addresses, ports, rtpengine,
                                                 disk, clock, certificate, data directory, store (exit 0: all pass)`,
  commands: {},
  offline: {
    async doctor(config, args, out) {
      new Flags(args).done();
      const findings = await diagnose(config);
      const width = Math.max(...findings.map((f) => f.check.length));
      const lines = findings.map(
        (f) =>
          `${f.verdict === 'fail' ? 'FAIL' : f.verdict.padEnd(4)}  ${f.check.padEnd(width)}  ${f.detail}` +
          (f.fix && f.verdict !== 'ok' ? `\n      ${' '.repeat(width)}  fix: ${f.fix}` : ''),
      );
      out.print(lines.join('\n'), findings);
      const failed = findings.filter((f) => f.verdict === 'fail').length;
      if (failed > 0) throw new DoctorFailed(`${failed} check${failed === 1 ? '' : 's'} failed`);
    },
  },
};
