import type { Knex } from 'knex';

/**
 * Per end-user call handling and voicemail: do-not-disturb, forwarding (always, on busy,
 * on no answer after `no_answer_seconds`) to an extension or an E.164 number, and a mailbox with an optional
 * greeting asset. A voicemail message is a Recording of the end-user (`end_user_id`) with `voicemail_status`
 * `new` until it is listened to (`saved`); ordinary recordings keep both null.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('end_users', (t) => {
    t.boolean('dnd').notNullable().defaultTo(false);
    t.string('forward_always', 16);
    t.string('forward_busy', 16);
    t.string('forward_no_answer', 16);
    t.integer('no_answer_seconds').notNullable().defaultTo(20);
    t.boolean('voicemail_enabled').notNullable().defaultTo(false);
    t.string('voicemail_greeting', 128);
  });
  await knex.schema.alterTable('recordings', (t) => {
    t.string('end_user_id', 36);
    t.string('voicemail_status', 8);
    t.index(['end_user_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('recordings', (t) => {
    t.dropIndex(['end_user_id', 'created_at']);
    t.dropColumn('end_user_id');
    t.dropColumn('voicemail_status');
  });
  await knex.schema.alterTable('end_users', (t) => {
    for (const c of [
      'dnd',
      'forward_always',
      'forward_busy',
      'forward_no_answer',
      'no_answer_seconds',
      'voicemail_enabled',
      'voicemail_greeting',
    ])
      t.dropColumn(c);
  });
}
