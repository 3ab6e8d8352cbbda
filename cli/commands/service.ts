import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../../config/index.js';
import { Flags, UsageError } from '../args.js';
import type { CommandGroup } from '../command.js';

/** The checkout this CLI runs from: the unit runs its compiled switch. */
const CHECKOUT = path.resolve(import.meta.dirname, '..', '..');

export interface UnitOptions {
  name: string;
  user: string;
  checkout: string;
  dataDir: string;
  node: string;
  stopSeconds: number;
}

/**
 * The systemd unit of a switch run from `checkout`. SIGTERM reaches the switch alone (KillMode=mixed), which
 * stops its calls and its rtpengine in order; whatever is left at TimeoutStopSec is killed. SIGHUP (ExecReload)
 * re-reads the configuration. Logs are the switch's JSON lines on stderr, which the journal keeps.
 */
export function systemdUnit(o: UnitOptions): string {
  return `# Written by \`simu service install\`; write it again after moving the checkout or the data directory.
[Unit]
Description=Simu softswitch (${o.checkout})
Documentation=file://${o.checkout}/README.md
After=network-online.target postgresql.service
Wants=network-online.target

[Service]
Type=exec
User=${o.user}
Group=${o.user}
WorkingDirectory=${o.checkout}
Environment=SIMU_DATA_DIR=${o.dataDir}
Environment=NODE_ENV=production
# Settings of this box (SIMU_PUBLIC_HOST=..., SIMU_DATABASE_URL=...), one per line; optional.
EnvironmentFile=-/etc/${o.name}/${o.name}.env
ExecStart=${o.node} --enable-source-maps ${o.checkout}/dist/main.js
ExecReload=/bin/kill -HUP $MAINPID
KillMode=mixed
KillSignal=SIGTERM
TimeoutStopSec=${o.stopSeconds}
Restart=on-failure
RestartSec=2
LimitNOFILE=65536
NoNewPrivileges=yes
PrivateTmp=yes
ProtectSystem=full
ReadWritePaths=${o.dataDir}

[Install]
WantedBy=multi-user.target
`;
}

function run(file: string, args: string[]): void {
  execFileSync(file, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function userExists(user: string): boolean {
  try {
    run('id', ['-u', user]);
    return true;
  } catch {
    return false;
  }
}

/** The data directory and everything in it handed to the service's user. */
function chownTree(dir: string, uid: number, gid: number): void {
  chownSync(dir, uid, gid);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) chownTree(p, uid, gid);
    else if (entry.isFile()) chownSync(p, uid, gid);
  }
}

function idsOf(user: string): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', user]).toString().trim());
  const gid = Number(execFileSync('id', ['-g', user]).toString().trim());
  return { uid, gid };
}

const NAME = /^[a-z_][a-z0-9_-]{0,31}$/;

/** The switch as a systemd service of this checkout. */
export const serviceCommands: CommandGroup = {
  noun: 'service',
  help: `  service install [--dry-run] [--user simu] [--name simu] [--stop-seconds 120] [--unit-dir DIR]
                                                 a systemd unit for this checkout (--dry-run prints it)`,
  commands: {},
  offline: {
    async 'service install'(config: Config, args, out) {
      const f = new Flags(args);
      const dryRun = f.bool('dry-run');
      const user = f.string('user', { default: 'simu' })!;
      const name = f.string('name', { default: 'simu' })!;
      const stopSeconds = f.int('stop-seconds', { min: 5, max: 86400 }) ?? 120;
      const unitDir = f.string('unit-dir', { default: '/etc/systemd/system' })!;
      f.done();
      if (!NAME.test(user)) throw new UsageError(`--user must be a system user name, not ${JSON.stringify(user)}`);
      if (!NAME.test(name)) throw new UsageError(`--name must be a unit name, not ${JSON.stringify(name)}`);
      const unit = systemdUnit({
        name,
        user,
        checkout: CHECKOUT,
        dataDir: config.dataDir,
        node: process.execPath,
        stopSeconds,
      });
      if (dryRun) {
        await out.write(unit);
        return;
      }
      if (process.getuid?.() !== 0) throw new UsageError('service install needs root (it adds a user and a unit)');
      if (!existsSync(unitDir) || !statSync(unitDir).isDirectory()) throw new UsageError(`no directory ${unitDir}`);
      run(process.execPath, [path.join(CHECKOUT, 'scripts', 'build.js')]);
      if (!userExists(user))
        run('useradd', [
          '--system',
          '--user-group',
          '--home-dir',
          config.dataDir,
          '--shell',
          '/usr/sbin/nologin',
          user,
        ]);
      mkdirSync(config.dataDir, { recursive: true });
      const ids = idsOf(user);
      chownTree(config.dataDir, ids.uid, ids.gid);
      const file = path.join(unitDir, `${name}.service`);
      writeFileSync(file, unit);
      const systemdRuns = existsSync('/run/systemd/system');
      if (systemdRuns) run('systemctl', ['daemon-reload']);
      out.print(
        [
          `wrote ${file} (user ${user}, data ${config.dataDir})`,
          systemdRuns ? '' : 'systemd is not running here: run `systemctl daemon-reload` where it does',
          `  systemctl enable --now ${name}     # start now and at boot`,
          `  systemctl reload ${name}           # re-read the configuration (SIGHUP)`,
          `  journalctl -u ${name} -f           # its JSON log lines`,
        ]
          .filter(Boolean)
          .join('\n'),
        { unit: file, user, dataDir: config.dataDir },
      );
    },
  },
};
