/**
 * What the registrar's store write of a refresh costs (store/registrations.ts writeRegistrations): `users` end-users
 * with one kept binding each, refreshed in batches of 128 (the registration writer's slice), written the two ways
 * in turn in one process on one store: `replace` (the end-user's rows deleted, the contact's rows of other nodes
 * deleted, the rows inserted) and `in place` (the refresh's upsert on the key). Prints the CPU of this process (the
 * writer's statements and group commits) per 1,000 refreshes, each way, per round.
 *
 *   npx tsx bench/store/registration-writes.bench.ts [users=6000] [rounds=6] [store=sqlite|postgres]
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  insertAccount,
  insertEndUser,
  migrate,
  openDb,
  writeRegistrations,
  type RegistrationRow,
  type RegistrationWrite,
} from '../../store/index.js';

const USERS = Number(process.argv[2] ?? 6000);
const ROUNDS = Number(process.argv[3] ?? 6);
const STORE = process.argv[4] ?? 'sqlite';
const SLICE = 128;

let url = '';
if (STORE === 'postgres') {
  const { startPostgres } = await import('../../test/support/postgres.js');
  url = await startPostgres();
}
const db = openDb({ databaseUrl: url, dataDir: mkdtempSync(path.join(os.tmpdir(), 'registration-writes-')) });
await migrate(db);
const account = await insertAccount(db, 'bench');
const ids: string[] = [];
for (let i = 0; i < USERS; i++) ids.push((await insertEndUser(db, account.id, `p${i}@bench.test`, `P${i}`)).id);

let cseq = 1;
const row = (id: string, i: number): RegistrationRow => ({
  end_user_id: id,
  contact: `sip:${1000 + i}@192.0.2.${i % 250}:${5060 + (i % 1000)}`,
  account_id: account.id,
  extension: String(1000 + i),
  source_address: `192.0.2.${i % 250}`,
  source_port: 5060 + (i % 1000),
  flow_id: `udp:192.0.2.${i % 250}:${5060 + (i % 1000)}`,
  token_id: `token-${i}`,
  call_id: `call-${i}-${cseq}`,
  cseq,
  registered_at: Date.now(),
  expires_at: Date.now() + 3_600_000,
  node_id: null,
  transport: 'UDP',
  unreachable_at: null,
});
const writes = (refresh: boolean): RegistrationWrite[] => {
  cseq++;
  const at = new Date().toISOString();
  return ids.map((id, i) => ({
    endUserId: id,
    state: 'registered',
    lastRegisteredAt: at,
    rows: [row(id, i)],
    ...(refresh && { refresh: true }),
  }));
};

/** CPU ms of this process per 1,000 refreshes, written a slice at a time as the registration writer does. */
async function round(refresh: boolean): Promise<number> {
  const all = writes(refresh);
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < all.length; i += SLICE) await writeRegistrations(db, all.slice(i, i + SLICE));
  await db.raw('select 1'); // the last group commit
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / 1000 / (all.length / 1000);
}

await round(false); // every end-user's row written once, and the statements prepared
await round(true);
const results: string[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const replace = await round(false);
  const inPlace = await round(true);
  results.push(`| ${r + 1} | ${replace.toFixed(1)} | ${inPlace.toFixed(1)} |`);
}
console.log(
  `\nregistration writes: ${USERS} end-users, one binding each, slices of ${SLICE}, store ${STORE}, ` +
    `load ${os.loadavg()[0]?.toFixed(1)}\n`,
);
console.log('| round | replace, CPU ms per 1,000 refreshes | in place |');
console.log('|---|---|---|');
for (const line of results) console.log(line);
await db.destroy();
