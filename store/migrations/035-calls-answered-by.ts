import type { Knex } from 'knex';

/**
 * Answering machine detection on calls the platform places: who answered (`human`, `machine_start`,
 * `machine_end_beep`, `machine_end_silence`, `machine_end_other`, `fax`, `unknown`) and how long deciding took, in
 * milliseconds. Null on a call that did not ask for detection.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('calls', (t) => {
    t.string('answered_by', 24);
    t.integer('machine_detection_ms');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('calls', (t) => {
    t.dropColumn('answered_by');
    t.dropColumn('machine_detection_ms');
  });
}
