import type { Knex } from 'knex';

/**
 * `calls.parent_call_sid`: the sid of the call a child leg (a Dial leg, a forward, a transferred party's new leg)
 * belongs to, beside its `parent_call_id`, so the API's Call object shows both without reading the parent. A sid
 * never changes, so the copy cannot go stale; rows written before this migration get theirs from the parent.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('calls', (t) => {
    t.string('parent_call_sid', 40);
  });
  await knex.raw(
    `update calls set parent_call_sid = (select p.sid from calls p where p.id = calls.parent_call_id)
     where parent_call_id is not null`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('calls', (t) => t.dropColumn('parent_call_sid'));
}
