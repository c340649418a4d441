import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientKey, readAddress, trustedProxies } from '../../src/http/client-address.js';

test('an IPv4 client is keyed by its address, an IPv4-mapped IPv6 address by the IPv4 address it maps', () => {
  assert.equal(clientKey('192.0.2.1'), '192.0.2.1');
  assert.equal(clientKey('::ffff:192.0.2.1'), '192.0.2.1');
  assert.equal(clientKey('::FFFF:c000:0201'), '192.0.2.1');
  assert.equal(clientKey('0:0:0:0:0:ffff:192.0.2.1'), '192.0.2.1');
});

test('an IPv6 client is keyed by its /64, however the address is written', () => {
  const key = '2001:db8:1:2::/64';
  for (const address of ['2001:db8:1:2::1', '2001:DB8:1:2:ffff:ffff:ffff:ffff', '2001:0db8:0001:0002:0:0:0:9', '2001:db8:1:2::10.0.0.1']) {
    assert.equal(clientKey(address), key, address);
  }
  assert.notEqual(clientKey('2001:db8:1:3::1'), key, 'the next /64 is another client');
  assert.equal(clientKey('::1'), '0:0:0:0::/64');
  assert.equal(clientKey('2001:db8::'), '2001:db8:0:0::/64');
  assert.equal(clientKey('fe80::1%eth0'), 'fe80:0:0:0::/64', 'a zone id is dropped');
  assert.equal(clientKey(undefined), '');
});

test('TRUST_PROXY entries (addresses, CIDRs, named ranges) are recognised on IPv4, mapped and IPv6 addresses', () => {
  assert.equal(trustedProxies(false), undefined);
  const trusted = trustedProxies('10.0.0.0/8, 192.0.2.7,2001:db8::/32,loopback');
  assert.ok(trusted);
  for (const address of ['10.1.2.3', '::ffff:10.1.2.3', '192.0.2.7', '2001:db8:5::1', '127.0.0.1', '::1']) assert.ok(trusted(address), address);
  for (const address of ['192.0.2.8', '11.0.0.1', '2001:db9::1', undefined]) assert.ok(!trusted(address), String(address));
});

test('an address is read without the port or brackets a proxy may add, in one spelling', () => {
  const read: Array<[string, string]> = [
    ['192.0.2.50', '192.0.2.50'],
    [' 192.0.2.50 ', '192.0.2.50'],
    ['192.0.2.50:40001', '192.0.2.50'],
    ['[2001:db8::1]', '2001:db8::1'],
    ['[2001:db8::1]:443', '2001:db8::1'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['::ffff:192.0.2.50', '192.0.2.50'],
    ['[::ffff:c000:232]:8080', '192.0.2.50'],
  ];
  for (const [text, address] of read) assert.equal(readAddress(text), address, text);
});

test('leading zeros, a bracketed IPv4 address, a bad port and any other text are unreadable', () => {
  const unreadable = [
    '192.000.002.050', '010.0.0.1', '192.0.2.050:80', '::ffff:010.0.0.1', '[192.0.2.50]', '192.0.2.50:123456', '2001:db8::1:443x',
    '[2001:db8::1', 'unknown', '', '_hidden', '192.0.2.50, 10.0.0.1', '0x7f.0.0.1', '3221225985',
  ];
  for (const text of unreadable) assert.equal(readAddress(text), undefined, text);
  assert.equal(readAddress(undefined), undefined);
});

test('a client key is the same for every spelling of one address', () => {
  for (const text of ['192.0.2.50', '192.0.2.50:1', '192.0.2.50:65535', '[::ffff:192.0.2.50]:9']) assert.equal(clientKey(text), '192.0.2.50', text);
  for (const text of ['[2001:db8:1:2::1]', '[2001:db8:1:2::7]:443', '2001:db8:1:2::9']) assert.equal(clientKey(text), '2001:db8:1:2::/64', text);
});

test('a trusted proxy is recognised when X-Forwarded-For writes it with a port; a leading-zero spelling is never trusted', () => {
  const trusted = trustedProxies('10.0.0.0/8, 2001:db8::/32');
  assert.ok(trusted);
  for (const address of ['10.0.0.7:5000', '[2001:db8::7]:443', '[2001:db8::7]']) assert.ok(trusted(address), address);
  // proxy-addr reads 012 as octal 10: 012.0.0.5 would have been the proxy 10.0.0.5.
  for (const address of ['012.0.0.5', '010.000.000.005', 'unknown']) assert.ok(!trusted(address), address);
});
