import { insertCall, type CallRow, type Db } from '../../store/index.js';

/** A live outbound call row of the account (status initiated), as admission's `place` writes one. */
export function insertOutboundCall(db: Db, accountId: string): Promise<CallRow> {
  return insertCall(db, {
    account_id: accountId,
    direction: 'outbound',
    from_number: '+254700000001',
    to_number: '+254722000001',
  });
}
