import assert from 'node:assert/strict';
import { bdecode, bencode, type BValue } from '../../media/index.js';

/** The encoding written out plainly, one Buffer per piece: what the wire format says, to compare bytes against. */
function reference(value: BValue): Buffer {
  if (typeof value === 'number') return Buffer.from(`i${value}e`);
  if (typeof value === 'string' || Buffer.isBuffer(value)) {
    const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
    return Buffer.concat([Buffer.from(`${bytes.length}:`), bytes]);
  }
  if (Array.isArray(value)) return Buffer.concat([Buffer.from('l'), ...value.map(reference), Buffer.from('e')]);
  const keys = Object.keys(value)
    .sort()
    .filter((k) => value[k] !== undefined);
  return Buffer.concat([
    Buffer.from('d'),
    ...keys.flatMap((k) => [reference(k), reference(value[k]!)]),
    Buffer.from('e'),
  ]);
}

const SDP =
  'v=0\r\no=- 1 1 IN IP4 198.51.100.1\r\ns=-\r\nc=IN IP4 198.51.100.1\r\nt=0 0\r\nm=audio 2000 RTP/AVP 0 101\r\n';

const MESSAGES: Array<Record<string, BValue | undefined>> = [
  {},
  { command: 'ping' },
  {
    command: 'offer',
    'call-id': 'a84b4c76e66710@198.51.100.1',
    'from-tag': '1928301774',
    'to-tag': undefined,
    sdp: SDP,
    flags: ['trust-address', 'inject DTMF'],
    replace: ['origin', 'session-connection'],
    codec: { transcode: ['PCMU'], strip: [] },
    'rtcp-mux': ['demux'],
  },
  { command: 'play media', 'call-id': 'c', file: '/var/lib/prompts/é→ü.wav', 'repeat-times': 3, 'start-pos': -20 },
  { n0: 0, n9: 9, n10: 10, big: 2 ** 40, neg: -1, empty: '', bytes: Buffer.from([0, 255, 58, 101]) },
  { ['ключ']: 'значение', long: 'x'.repeat(65) + 'ÿ', longAscii: 'y'.repeat(300), nested: [[], [{}], ['a', 1]] },
  { huge: 'z'.repeat(300_000), after: 'still here' },
];

describe('media: bencode', () => {
  it('encodes ng messages to the same bytes as the plain encoding, and decodes them back', () => {
    for (const msg of MESSAGES) {
      const ours = bencode(msg);
      assert.ok(ours.equals(reference(msg)), `bytes differ for ${JSON.stringify(msg).slice(0, 80)}`);
      const plain = Object.fromEntries(
        Object.entries(msg)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString('utf8') : v]),
      );
      assert.deepEqual(bdecode(ours), plain);
    }
  });

  it('writes a prefix (an ng cookie) and the message into one datagram', () => {
    const msg = MESSAGES[2]!;
    const datagram = bencode(msg, 'a1b2c3 ');
    assert.ok(datagram.equals(Buffer.concat([Buffer.from('a1b2c3 '), reference(msg)])));
    // Encodings do not share memory: an earlier one is intact after later ones.
    const first = bencode({ a: 'first' });
    bencode({ a: 'second, longer' });
    assert.equal(first.toString(), 'd1:a5:firste');
  });

  it('refuses malformed input with a BencodeError', () => {
    for (const bad of ['', 'i12', '5:abc', 'd1:a', 'di1ei2ee', 'x', 'l1:ae1:b', '3x:abc']) {
      assert.throws(() => bdecode(Buffer.from(bad)), { name: 'BencodeError' }, JSON.stringify(bad));
    }
    assert.throws(() => bencode({ n: 1.5 }), TypeError);
  });
});
