import type { Knex } from 'knex';
import { sipLabelOf } from '../sip-labels.js';

/**
 * Readable SIP domains: `accounts.sip_label`, unique, the account's label under the switch's
 * domain (`acme` of `acme.sip.example.net`). Existing accounts get one derived from their name, numbered on a clash.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('accounts', (t) => {
    t.string('sip_label', 63);
  });
  const rows: Array<{ id: string; name: string }> = await knex('accounts')
    .orderBy('created_at', 'asc')
    .select('id', 'name');
  const taken = new Set<string>();
  for (const r of rows) {
    const base = sipLabelOf(r.name);
    let label = base;
    for (let n = 2; taken.has(label); n++) label = `${base}-${n}`;
    taken.add(label);
    await knex('accounts').where({ id: r.id }).update({ sip_label: label });
  }
  await knex.schema.alterTable('accounts', (t) => {
    t.unique(['sip_label'], { indexName: 'accounts_sip_label_unique' });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('accounts', (t) => {
    t.dropUnique(['sip_label'], 'accounts_sip_label_unique');
  });
  await knex.schema.alterTable('accounts', (t) => t.dropColumn('sip_label'));
}
