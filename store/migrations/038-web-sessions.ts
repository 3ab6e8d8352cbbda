import type { Knex } from 'knex';
import { CHANGES_CHANNEL } from '../other-writers.js';

const TRIGGER = 'simu_notify_credentials';

/**
 * Portal and console sessions move from each process's memory into the store (store/web-sessions.ts), so every node
 * honours them. The portal's session keys minted before were held in memory only: they are revoked here once.
 *
 * PostgreSQL: phone_tokens and end_users notify their writes on CHANGES_CHANNEL as the cached tables do
 * (store/change-notify.ts), so a registrar drops the credentials it remembered when another node mints or revokes a
 * token or disables an end-user. end_users notifies nobody for the columns each registration writes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('web_sessions', (t) => {
    t.string('id_hash', 64).primary();
    t.string('kind', 16).notNullable(); // portal | console
    t.string('user_id', 36).notNullable();
    t.string('account_id', 36);
    t.string('email', 320).notNullable();
    t.string('api_key_id', 36);
    t.bigInteger('created_at').notNullable().index();
    t.bigInteger('last_seen_at').notNullable().index();
  });
  await knex('api_keys')
    .where({ name: 'portal-session', is_active: true })
    .update({ is_active: false, revoked_at: new Date().toISOString() });
  if (knex.client.config.client !== 'pg') return;
  await knex.raw(
    `create or replace function ${TRIGGER}() returns trigger language plpgsql as $$ ` +
      `begin perform pg_notify('${CHANGES_CHANNEL}', TG_TABLE_NAME); return null; end $$`,
  );
  await knex.raw(
    `create trigger ${TRIGGER} after insert or update or delete on phone_tokens for each row execute function ${TRIGGER}()`,
  );
  const { rows } = await knex.raw<{ rows: { column_name: string }[] }>(
    `select column_name from information_schema.columns where table_schema = current_schema() and table_name = 'end_users'
     order by ordinal_position`,
  );
  const cols = rows.map((r) => r.column_name).filter((c) => c !== 'registration_state' && c !== 'last_registered_at');
  await knex.raw(
    `create trigger ${TRIGGER} after insert or delete or update of ${cols.map((c) => `"${c}"`).join(', ')} ` +
      `on end_users for each row execute function ${TRIGGER}()`,
  );
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') {
    await knex.raw(`drop trigger if exists ${TRIGGER} on phone_tokens`);
    await knex.raw(`drop trigger if exists ${TRIGGER} on end_users`);
    await knex.raw(`drop function if exists ${TRIGGER}()`);
  }
  await knex.schema.dropTable('web_sessions');
}
