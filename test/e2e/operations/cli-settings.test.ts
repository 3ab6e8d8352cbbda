import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { findAccountSettings, insertAccount } from '../../../store/index.js';
import { newPostgresDatabase } from '../../support/db.js';
import { allocateSwitchPorts, startTestSwitch } from '../support/harness.js';

const SIMU = path.resolve(import.meta.dirname, '..', '..', '..', 'bin', 'simu');

/** Runs the real bin/simu; resolves with the time (performance.now) it printed `printed`, after its write. */
function simuPrints(env: Record<string, string>, printed: string, ...argv: string[]): Promise<number> {
  const proc = spawn(SIMU, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    proc.stdout.on('data', (d) => {
      out += d;
      if (out.includes(printed)) resolve(performance.now());
    });
    proc.stderr.on('data', (d) => (out += d));
    proc.once('exit', (code) => reject(new Error(`bin/simu exited ${code} without printing "${printed}":\n${out}`)));
  });
}

/**
 * The README: "changes take effect in a running switch" within the poll of other writers (SQLite, 50 ms) or at
 * their commit (PostgreSQL): the operator's CLI is another process writing the switch's store.
 */
[
  { name: 'sqlite', env: async (): Promise<Record<string, string>> => ({}) },
  { name: 'postgres', env: async () => ({ SIMU_DATABASE_URL: await newPostgresDatabase() }) },
].forEach((kind) =>
  describe(`e2e: a setting changed with bin/simu reaches the running switch within 200 ms (${kind.name})`, function () {
    this.timeout(120000);
    const PORTS = allocateSwitchPorts();
    let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
    let env: Record<string, string>;

    before(async () => {
      const store = await kind.env();
      ctx = await startTestSwitch({ ...PORTS, env: store });
      env = { ...store, SIMU_DATA_DIR: ctx.config.dataDir, SIMU_LOG_LEVEL: 'silent' };
    });
    after(async () => {
      await ctx?.sw.stop();
    });

    it('`prepaid settings --last-good` on, then off: the switch reads each within 200 ms of the write', async () => {
      const account = await insertAccount(ctx.db, 'cli');
      const lastGood = async () => Boolean((await findAccountSettings(ctx.db, account.id))?.last_good_document);
      for (const on of [true, false, true]) {
        // The switch keeps reading the setting while the CLI runs, as its calls do: the row stays cached.
        let seenAt = 0;
        let reading = true;
        const reader = (async () => {
          while (reading) {
            if ((await lastGood()) === on && seenAt === 0) seenAt = performance.now();
            await new Promise((r) => setTimeout(r, 5));
          }
        })();
        const word = on ? 'on' : 'off';
        const wroteAt = await simuPrints(
          env,
          `last good document ${word}`,
          'prepaid',
          'settings',
          account.id,
          '--last-good',
          word,
        );
        const deadline = performance.now() + 3000;
        while (seenAt === 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
        reading = false;
        await reader;
        assert.ok(seenAt > 0, `the switch never read last good ${word}`);
        const ms = Math.max(0, seenAt - wroteAt);
        if (process.env.SIMU_TEST_FIGURES) console.log({ store: kind.name, on, ms });
        assert.ok(ms < 200, `last good ${word} reached the switch ${ms.toFixed(0)} ms after bin/simu wrote it`);
      }
    });
  }),
);
