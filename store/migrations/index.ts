import type { Knex } from 'knex';
import * as m001 from './001-initial.js';
import * as m002 from './002-security.js';
import * as m003 from './003-billing.js';
import * as m004 from './004-calls-list-indexes.js';
import * as m005 from './005-calls-search.js';
import * as m006 from './006-billing-committed.js';
import * as m007 from './007-portal.js';
import * as m008 from './008-assets.js';
import * as m009 from './009-destinations.js';
import * as m010 from './010-registrations.js';
import * as m011 from './011-phone-token-issued-at.js';
import * as m012 from './012-outbox-call-order-index.js';
import * as m013 from './013-stream-token-api-key.js';
import * as m014 from './014-webhook-route-key.js';
import * as m015 from './015-routes.js';
import * as m016 from './016-number-plan.js';
import * as m017 from './017-calls-created-index.js';
import * as m018 from './018-call-handling.js';
import * as m019 from './019-account-sip-domain.js';
import * as m022 from './022-operator-console.js';
import * as m023 from './023-prepaid.js';
import * as m026 from './026-operator-audit-seq.js';
import * as m027 from './027-calls-search-batched.js';
import * as m030 from './030-account-live-calls.js';
import * as m031 from './031-change-notify.js';
import * as m032 from './032-call-parent-sid.js';
import * as m033 from './033-topup-ledger-index.js';
import * as m034 from './034-nodes.js';
import * as m035 from './035-calls-answered-by.js';
import * as m036 from './036-call-admissions.js';
import * as m037 from './037-node-messages.js';
import * as m038 from './038-web-sessions.js';
import * as m039 from './039-registration-node.js';
import * as m040 from './040-registration-path.js';
import * as m041 from './041-room-leases.js';
import * as m042 from './042-outbox-reply-status.js';
import * as m043 from './043-outbox-pending-indexes.js';
import * as m044 from './044-expiry-indexes.js';

/**
 * Migrations are listed in code (not discovered on disk) so they run the same under tsx, in tests and in a bundle.
 * Add a new file per change and append it here, in the order of their numbers (a store migrated before keeps its
 * order: knex checks names, not positions); never edit one that has shipped.
 */
const MIGRATIONS: Array<[string, Knex.Migration]> = [
  ['001-initial', m001],
  ['002-security', m002],
  ['003-billing', m003],
  ['004-calls-list-indexes', m004],
  ['005-calls-search', m005],
  ['006-billing-committed', m006],
  ['007-portal', m007],
  ['008-assets', m008],
  ['009-destinations', m009],
  ['010-registrations', m010],
  ['011-phone-token-issued-at', m011],
  ['012-outbox-call-order-index', m012],
  ['013-stream-token-api-key', m013],
  ['014-webhook-route-key', m014],
  ['015-routes', m015],
  ['016-number-plan', m016],
  ['017-calls-created-index', m017],
  ['018-call-handling', m018],
  ['019-account-sip-domain', m019],
  ['022-operator-console', m022],
  ['023-prepaid', m023],
  ['026-operator-audit-seq', m026],
  ['027-calls-search-batched', m027],
  ['030-account-live-calls', m030],
  ['031-change-notify', m031],
  ['032-call-parent-sid', m032],
  ['033-topup-ledger-index', m033],
  ['034-nodes', m034],
  ['035-calls-answered-by', m035],
  ['036-call-admissions', m036],
  ['037-node-messages', m037],
  ['038-web-sessions', m038],
  ['039-registration-node', m039],
  ['040-registration-path', m040],
  ['041-room-leases', m041],
  ['042-outbox-reply-status', m042],
  ['043-outbox-pending-indexes', m043],
  ['044-expiry-indexes', m044],
];

export const migrationSource: Knex.MigrationSource<[string, Knex.Migration]> = {
  getMigrations: async () => MIGRATIONS,
  getMigrationName: (m) => m[0],
  getMigration: async (m) => m[1],
};
