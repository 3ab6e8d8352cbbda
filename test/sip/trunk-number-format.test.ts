import assert from 'node:assert/strict';
import { trunkTarget } from '../../sip/trunks.js';
import type { TrunkRow } from '../../store/index.js';

const trunk = (number_format: string | null): TrunkRow =>
  ({
    id: 't1',
    name: 'carrier',
    host: '192.0.2.10',
    port: 5060,
    transport: 'udp',
    username: null,
    password: null,
    inbound_addresses: [],
    is_active: true,
    number_format,
  }) as unknown as TrunkRow;

/** Issue 17, item 5: numbers are sent to each trunk in the form it wants. */
describe('sip/trunks: the number form of a trunk', () => {
  it('E.164 by default, the national form, or a tech prefix before the digits', () => {
    assert.equal(trunkTarget(trunk(null), '').requestUri('+254712345678'), 'sip:+254712345678@192.0.2.10:5060');
    assert.equal(trunkTarget(trunk('e164'), '').requestUri('+254712345678'), 'sip:+254712345678@192.0.2.10:5060');
    assert.equal(trunkTarget(trunk('national'), '').requestUri('+254712345678'), 'sip:0712345678@192.0.2.10:5060');
    assert.equal(
      trunkTarget(trunk('prefix:77#'), '').requestUri('+254712345678'),
      'sip:77%23254712345678@192.0.2.10:5060',
    );
    assert.equal(
      trunkTarget(trunk('national'), '').requestUri('112'),
      'sip:112@192.0.2.10:5060',
      'emergency as dialled',
    );
  });
});
