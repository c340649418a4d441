import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientKey, trustedProxies } from '../../src/http/client-address.js';

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
