import type { Knex } from 'knex';

/**
 * `operator_audit.seq`: the order the log was written in. The log was ordered by `at`, then a random id, with `at`
 * made strictly increasing in each process only: two writers (two switches on PostgreSQL, the CLI beside the switch,
 * hosts whose clocks differ) could list a later action as older. On PostgreSQL `seq` is taken from a sequence (its
 * default); on SQLite each INSERT takes max(seq) + 1 under the database's single write lock (store/operators.ts).
 * Existing entries are numbered in their old order.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('operator_audit', (t) => {
    t.bigInteger('seq');
  });
  await knex.raw(
    'update operator_audit set seq = (select count(*) from operator_audit b ' +
      'where b.at < operator_audit.at or (b.at = operator_audit.at and b.id <= operator_audit.id))',
  );
  if (knex.client.config.client === 'pg') {
    await knex.raw('create sequence operator_audit_seq owned by operator_audit.seq');
    await knex.raw(
      "select setval('operator_audit_seq', (select coalesce(max(seq), 0) + 1 from operator_audit), false)",
    );
    await knex.raw("alter table operator_audit alter column seq set default nextval('operator_audit_seq')");
    await knex.raw('alter table operator_audit alter column seq set not null');
  }
  await knex.schema.alterTable('operator_audit', (t) => {
    t.unique(['seq'], { indexName: 'operator_audit_seq_unique' });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('operator_audit', (t) => {
    t.dropUnique(['seq'], 'operator_audit_seq_unique');
  });
  await knex.schema.alterTable('operator_audit', (t) => {
    t.dropColumn('seq');
  });
  if (knex.client.config.client === 'pg') await knex.raw('drop sequence if exists operator_audit_seq');
}
