import assert from 'node:assert/strict';
import { base32Decode, base32Encode, hotp, otpauthUri, totp, verifyTotp } from '../../api/totp.js';

// RFC 6238 Appendix B: the SHA-1 seed is the ASCII "12345678901234567890"; SHA-256 and SHA-512 use it repeated
// to 32 and 64 bytes. Codes are 8 digits there.
const SEED1 = Buffer.from('12345678901234567890');
const SEED256 = Buffer.from('12345678901234567890123456789012');
const SEED512 = Buffer.from('1234567890123456789012345678901234567890123456789012345678901234');
const VECTORS: Array<[number, string, string, string]> = [
  [59, '94287082', '46119246', '90693936'],
  [1111111109, '07081804', '68084774', '25091201'],
  [1111111111, '14050471', '67062674', '99943326'],
  [1234567890, '89005924', '91819424', '93441116'],
  [2000000000, '69279037', '90698825', '38618901'],
  [20000000000, '65353130', '77737706', '47863826'],
];

describe('api/totp (RFC 6238)', () => {
  it('matches every RFC 6238 Appendix B vector for SHA-1, SHA-256 and SHA-512', () => {
    for (const [t, sha1, sha256, sha512] of VECTORS) {
      assert.equal(totp(base32Encode(SEED1), t * 1000, 8, 'sha1'), sha1, `sha1 at ${t}`);
      assert.equal(totp(base32Encode(SEED256), t * 1000, 8, 'sha256'), sha256, `sha256 at ${t}`);
      assert.equal(totp(base32Encode(SEED512), t * 1000, 8, 'sha512'), sha512, `sha512 at ${t}`);
    }
  });

  it('matches RFC 4226 Appendix D HOTP values', () => {
    const want = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489'];
    want.forEach((w, i) => assert.equal(hotp(SEED1, i), w));
  });

  it('round-trips base32 (RFC 4648 section 10 vectors)', () => {
    assert.equal(base32Encode(Buffer.from('foobar')), 'MZXW6YTBOI');
    assert.equal(base32Decode('MZXW6YTBOI======').toString(), 'foobar');
    assert.equal(base32Decode('mzxw6ytboi').toString(), 'foobar');
    assert.throws(() => base32Decode('MZ1'), { code: 'BASE32_INVALID' });
  });

  it('accepts the previous, current and next step only, and returns the step', () => {
    const secret = base32Encode(SEED1);
    const t = 1111111111_000;
    const step = Math.floor(t / 30_000);
    for (const d of [-1, 0, 1]) assert.equal(verifyTotp(secret, totp(secret, t + d * 30_000), t), step + d);
    for (const d of [-3, -2, 2, 3]) assert.equal(verifyTotp(secret, totp(secret, t + d * 30_000), t), null);
    assert.equal(verifyTotp(secret, '12345', t), null);
    assert.equal(verifyTotp(secret, 'abcdef', t), null);
  });

  it('makes an otpauth:// URI authenticator apps read', () => {
    const u = new URL(otpauthUri('MZXW6YTBOI', 'ann@example.com'));
    assert.equal(u.protocol, 'otpauth:');
    assert.equal(u.host, 'totp');
    assert.equal(decodeURIComponent(u.pathname), '/Simu:ann@example.com');
    assert.equal(u.searchParams.get('secret'), 'MZXW6YTBOI');
    assert.equal(u.searchParams.get('period'), '30');
  });
});
