import type { Knex } from 'knex';

/**
 * The first schema: every resource of the platform spec. Conventions:
 * - ids are text UUIDs; every customer row carries `account_id`;
 * - timestamps are ISO-8601 UTC text (`Date#toISOString`), so SQLite and PostgreSQL sort and compare them alike;
 * - money is integer minor units (cents of KES), never a float.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('accounts', (t) => {
    t.string('id', 36).primary();
    t.string('name', 200).notNullable();
    t.string('status', 16).notNullable().defaultTo('active'); // active | suspended
    t.bigInteger('balance_cents').notNullable().defaultTo(0);
    t.integer('max_concurrent_calls').notNullable().defaultTo(50);
    t.integer('max_cps').notNullable().defaultTo(10);
    t.integer('max_call_seconds').notNullable().defaultTo(14400);
    t.text('signing_secret').notNullable();
    t.text('webhook_voice_inbound').notNullable().defaultTo('');
    t.text('webhook_voice_outbound').notNullable().defaultTo('');
    t.text('webhook_status').notNullable().defaultTo('');
    t.string('fallback_mode', 16).notNullable().defaultTo('drop');
    t.text('fallback_value').notNullable().defaultTo('');
    t.integer('recording_retention_days'); // null: platform default
    t.string('created_at', 32).notNullable();
  });

  await knex.schema.createTable('api_keys', (t) => {
    t.string('id', 36).primary();
    t.string('account_id', 36).notNullable().references('accounts.id');
    t.string('name', 200).notNullable();
    t.string('prefix', 16).notNullable();
    t.string('key_hash', 64).notNullable().unique();
    t.boolean('is_active').notNullable().defaultTo(true);
    t.string('last_used_at', 32);
    t.string('revoked_at', 32);
    t.string('created_at', 32).notNullable();
    t.index(['account_id']);
  });

  // The number pool and owned numbers are one table: a pool number has no account.
  await knex.schema.createTable('numbers', (t) => {
    t.string('id', 36).primary();
    t.string('number', 32).notNullable().unique();
    t.string('account_id', 36).references('accounts.id');
    t.string('friendly_name', 200).notNullable().defaultTo('');
    t.boolean('is_active').notNullable().defaultTo(false);
    t.text('webhook_voice_inbound').notNullable().defaultTo('');
    t.text('webhook_voice_outbound').notNullable().defaultTo('');
    t.text('webhook_status').notNullable().defaultTo('');
    t.string('acquired_at', 32);
    t.string('created_at', 32).notNullable();
    t.index(['account_id']);
  });

  await knex.schema.createTable('end_users', (t) => {
    t.string('id', 36).primary();
    t.string('account_id', 36).notNullable().references('accounts.id');
    t.string('email', 320).notNullable();
    t.string('display_name', 200).notNullable().defaultTo('');
    t.string('extension_number', 16).notNullable();
    t.boolean('is_active').notNullable().defaultTo(true);
    t.string('registration_state', 16).notNullable().defaultTo('unregistered'); // registered | unregistered
    t.string('last_registered_at', 32);
    t.string('deleted_at', 32);
    t.string('created_at', 32).notNullable();
    t.unique(['account_id', 'email']);
    t.unique(['account_id', 'extension_number']);
  });

  await knex.schema.createTable('phone_tokens', (t) => {
    t.string('id', 36).primary();
    t.string('account_id', 36).notNullable().references('accounts.id');
    t.string('end_user_id', 36).notNullable().references('end_users.id');
    t.string('extension_number', 16).notNullable();
    t.integer('max_concurrent').notNullable().defaultTo(1);
    t.string('expires_at', 32).notNullable();
    t.string('revoked_at', 32);
    t.string('created_at', 32).notNullable();
    t.index(['account_id', 'end_user_id']);
  });

  await knex.schema.createTable('calls', (t) => {
    t.string('id', 36).primary();
    t.string('sid', 40).notNullable().unique();
    t.string('account_id', 36).notNullable().references('accounts.id');
    t.string('direction', 16).notNullable(); // inbound | outbound | internal
    t.string('from_number', 64).notNullable();
    t.string('to_number', 64).notNullable();
    t.string('status', 16).notNullable(); // initiated | ringing | answered | completed | failed
    t.string('reason_code', 16);
    t.string('reason_label', 80);
    t.integer('duration_seconds');
    t.integer('talk_seconds');
    t.bigInteger('cost_cents').notNullable().defaultTo(0);
    t.integer('tts_seconds').notNullable().defaultTo(0);
    t.text('custom_payload'); // JSON text or null
    t.text('webhook_url'); // per-call call-control URL (originate's `url`)
    t.string('number_id', 36); // the account's DID the call came in on or presents
    t.string('end_user_id', 36);
    t.string('parent_call_id', 36); // a Dial leg's parent
    t.string('node_id', 64); // the switch process that holds it live (reconcile sweep)
    t.string('started_at', 32);
    t.string('answered_at', 32);
    t.string('ended_at', 32);
    t.string('created_at', 32).notNullable();
    t.index(['account_id', 'created_at']);
    t.index(['account_id', 'status', 'created_at']);
    t.index(['account_id', 'direction', 'created_at']);
    t.index(['status']);
  });

  await knex.schema.createTable('call_events', (t) => {
    t.string('id', 36).primary();
    t.string('account_id', 36).notNullable();
    t.string('call_id', 36);
    t.string('code', 16).notNullable();
    t.string('event', 64).notNullable();
    t.text('data').notNullable().defaultTo('{}');
    t.string('created_at', 32).notNullable();
    t.index(['account_id', 'call_id']);
  });

  await knex.schema.createTable('recordings', (t) => {
    t.string('id', 36).primary();
    t.string('account_id', 36).notNullable().references('accounts.id');
    t.string('call_id', 36).notNullable();
    t.string('call_sid', 40).notNullable();
    t.integer('duration_seconds');
    t.bigInteger('size_bytes');
    t.string('media_format', 16).notNullable().defaultTo('wav');
    t.string('storage_backend', 16).notNullable().defaultTo('local');
    t.text('storage_path');
    t.string('expires_at', 32);
    t.string('deleted_at', 32);
    t.string('media_deleted_at', 32);
    t.string('created_at', 32).notNullable();
    t.index(['account_id', 'created_at']);
    t.index(['account_id', 'call_id']);
  });

  // Ledger: every change of a balance is a row; `balance_before` chains per account.
  await knex.schema.createTable('wallet_transactions', (t) => {
    t.string('id', 36).primary();
    t.string('account_id', 36).notNullable().references('accounts.id');
    t.string('direction', 8).notNullable(); // credit | debit
    t.string('kind', 24).notNullable(); // topup | did_setup | call | tts | adjustment
    t.bigInteger('amount_cents').notNullable();
    t.bigInteger('balance_before_cents').notNullable();
    t.string('call_id', 36);
    t.string('settlement_key', 120).unique(); // exactly-once charges (one per call and kind)
    t.string('created_at', 32).notNullable();
    t.integer('seq').notNullable(); // per-account order, unique with account
    t.unique(['account_id', 'seq']);
  });

  await knex.schema.createTable('idempotency_keys', (t) => {
    t.string('account_id', 36).notNullable();
    t.string('key', 255).notNullable();
    t.string('scope', 40).notNullable(); // which endpoint
    t.string('request_hash', 64).notNullable();
    t.string('state', 12).notNullable(); // in_flight | done
    t.integer('status_code');
    t.text('response_body');
    t.string('created_at', 32).notNullable();
    t.string('expires_at', 32).notNullable();
    t.primary(['account_id', 'key']);
  });

  // Status callbacks waiting for delivery: at least once, in order per call, durable across restarts.
  await knex.schema.createTable('event_outbox', (t) => {
    t.string('id', 36).primary(); // the event id the receiver de-duplicates on
    t.string('account_id', 36).notNullable();
    t.string('call_id', 36);
    t.string('event', 64).notNullable();
    t.text('url').notNullable();
    t.text('body').notNullable(); // raw JSON as sent (sorted keys)
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('state', 12).notNullable().defaultTo('pending'); // pending | delivered | failed
    t.string('next_attempt_at', 32).notNullable();
    t.text('last_error');
    t.string('created_at', 32).notNullable();
    t.string('done_at', 32);
    t.index(['state', 'next_attempt_at']);
    t.index(['call_id', 'created_at']);
  });

  await knex.schema.createTable('webhook_routes', (t) => {
    t.string('account_id', 36).notNullable();
    t.text('url').notNullable();
    t.integer('consecutive_failures').notNullable().defaultTo(0);
    t.boolean('disabled').notNullable().defaultTo(false);
    t.string('disabled_at', 32);
    t.string('updated_at', 32).notNullable();
    t.primary(['account_id', 'url']);
  });

  await knex.schema.createTable('stream_tokens', (t) => {
    t.string('token_hash', 64).primary();
    t.string('account_id', 36); // null for a staff token
    t.boolean('staff').notNullable().defaultTo(false);
    t.string('expires_at', 32).notNullable();
    t.string('used_at', 32);
  });

  await knex.schema.createTable('trunks', (t) => {
    t.string('id', 36).primary();
    t.string('name', 100).notNullable().unique();
    t.string('host', 255).notNullable();
    t.integer('port').notNullable().defaultTo(5060);
    t.string('transport', 8).notNullable().defaultTo('udp'); // udp | tcp | tls
    t.string('username', 100);
    t.string('password', 200);
    t.text('inbound_addresses').notNullable().defaultTo('[]'); // JSON array of IPs/CIDRs
    t.boolean('is_active').notNullable().defaultTo(true);
    t.string('created_at', 32).notNullable();
  });

  // Operator rates. kind: outbound (per minute, by longest prefix), inbound (per minute), internal (per minute),
  // tts (per second, by tier), did_setup (one-off).
  await knex.schema.createTable('rates', (t) => {
    t.string('id', 36).primary();
    t.string('kind', 16).notNullable();
    t.string('prefix', 32).notNullable().defaultTo('');
    t.string('tier', 32).notNullable().defaultTo('');
    t.bigInteger('amount_cents').notNullable();
    t.string('created_at', 32).notNullable();
    t.unique(['kind', 'prefix', 'tier']);
  });

  // Platform-wide switches the CLI flips while the server runs (e.g. draining).
  await knex.schema.createTable('platform_settings', (t) => {
    t.string('key', 64).primary();
    t.text('value').notNullable();
    t.string('updated_at', 32).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'platform_settings',
    'rates',
    'trunks',
    'stream_tokens',
    'webhook_routes',
    'event_outbox',
    'idempotency_keys',
    'wallet_transactions',
    'recordings',
    'call_events',
    'calls',
    'phone_tokens',
    'end_users',
    'numbers',
    'api_keys',
    'accounts',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
