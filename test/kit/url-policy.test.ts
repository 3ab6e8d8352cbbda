import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { UrlPolicy, classifyAddress, literalUrlVerdict, parseAddress } from '../../kit/index.js';

describe('kit: outbound URL policy (issue 22, SSRF)', () => {
  const cases: Array<[string, string]> = [
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'private'],
    ['198.19.255.1', 'private'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['169.254.169.254', 'link-local'],
    ['192.0.0.192', 'reserved'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fc00::1', 'ula'],
    ['fd12:3456::1', 'ula'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['::ffff:10.0.0.1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['8.8.8.8', 'public'],
    ['172.32.0.1', 'public'],
    ['100.128.0.1', 'public'],
    ['2606:4700::1111', 'public'],
    ['::ffff:8.8.8.8', 'public'],
  ];
  for (const [address, expected] of cases) {
    it(`${address} is ${expected}`, () => assert.equal(classifyAddress(address), expected));
  }

  it('parses IPv6 forms to the same bytes', () => {
    assert.deepEqual(parseAddress('::ffff:127.0.0.1'), parseAddress('0:0:0:0:0:ffff:7f00:0001'));
    assert.deepEqual(parseAddress('[::1]'), parseAddress('0:0:0:0:0:0:0:1'));
    assert.equal(parseAddress('example.com'), undefined);
  });

  it('the strict policy refuses every non-public class; allowPrivate opens loopback, RFC 1918, CGNAT, ULA only', () => {
    const strict = new UrlPolicy();
    const open = new UrlPolicy({ allowPrivate: true });
    for (const a of ['127.0.0.1', '::1', '10.0.0.1', '100.64.0.1', 'fd00::1', '::ffff:127.0.0.1']) {
      assert.equal(strict.check(a).allowed, false, `strict refuses ${a}`);
      assert.equal(open.check(a).allowed, true, `allowPrivate allows ${a}`);
    }
    for (const a of [
      '169.254.169.254',
      '::ffff:169.254.169.254',
      'fe80::1',
      '0.0.0.0',
      '::',
      '224.0.0.1',
      '192.0.0.192',
    ]) {
      assert.equal(open.check(a).allowed, false, `allowPrivate still refuses ${a}`);
    }
    assert.equal(strict.check('8.8.8.8').allowed, true);
  });

  it('allow lists a network outside the classes; deny refuses one inside them', () => {
    const p = new UrlPolicy({ allowPrivate: true, allow: ['169.254.10.0/24'], deny: ['127.0.0.1'] });
    assert.equal(p.check('169.254.10.7').allowed, true);
    assert.equal(p.check('169.254.169.254').allowed, false);
    assert.equal(p.check('127.0.0.1').allowed, false);
    assert.equal(p.check('::ffff:127.0.0.1').allowed, false, 'deny matches the mapped form too');
    assert.equal(p.check('127.0.0.2').allowed, true);
  });

  it("this box's own interface addresses are 'self', refused unless private destinations are allowed", () => {
    const own = Object.values(networkInterfaces())
      .flat()
      .map((i) => i?.address)
      .filter((a): a is string => a !== undefined);
    assert.ok(own.length > 0);
    for (const a of own) assert.equal(new UrlPolicy().check(a).allowed, false, `own address ${a}`);
  });

  it('numeric host spellings the WHATWG parser turns into 127.0.0.1 are judged as 127.0.0.1', () => {
    const strict = new UrlPolicy();
    for (const url of [
      'http://2130706433/',
      'http://0x7f.1/',
      'http://0177.0.0.1/',
      'http://127.1/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::1]:8080/',
    ]) {
      const v = literalUrlVerdict(url, strict);
      assert.equal(v?.allowed, false, url);
      assert.equal(v?.class, 'loopback', url);
    }
    assert.equal(literalUrlVerdict('http://localhost/', strict), undefined, 'a name needs resolving');
    assert.equal(literalUrlVerdict('http://8.8.8.8/', strict)?.allowed, true);
  });
});
