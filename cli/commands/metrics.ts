import { METRICS_TOKEN_SETTING } from '../../api/index.js';
import { putSetting, randomToken, sha256Hex } from '../../store/index.js';
import { Flags } from '../args.js';
import type { CommandGroup } from '../command.js';

/** The operator token Prometheus scrapes GET /metrics with. */
export const metricsCommands: CommandGroup = {
  noun: 'metrics',
  help: `  metrics token                                  a new bearer token for GET /metrics (replaces the last one;
                                                 only its SHA-256 is stored, so it is shown once)`,
  commands: {
    async 'metrics token'(db, args, out) {
      new Flags(args).done();
      const token = `mt_${randomToken(24)}`;
      await putSetting(db, METRICS_TOKEN_SETTING, sha256Hex(token));
      out.print(
        `metrics token (shown once; the previous one stops working within 2 s): ${token}\n` +
          `Prometheus: authorization: { type: Bearer, credentials: ${token} }, metrics_path: /metrics`,
        { token },
      );
    },
  },
};
