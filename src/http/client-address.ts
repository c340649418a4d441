import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { TrustProxy } from '../config/values.js';
import { ipv4Of, ipv6Groups } from '../domain/ip.js';

/**
 * The client a limit counts against, given its address (a socket's remoteAddress, or request.ip):
 *
 * - IPv4: the address itself (`192.0.2.1`).
 * - IPv4-mapped IPv6 (`::ffff:192.0.2.1`, what a dual-stack listener reports for an IPv4 client): that
 *   IPv4 address, so that one client is one key whichever way the server listens.
 * - Any other IPv6 address: its /64 (`2001:db8:1:2::/64`). A /64 is what one subscriber, one LAN or one
 *   host is given (RFC 6177, RFC 7934), and it holds 2^64 addresses: keyed by the exact address, a client
 *   could take a new one for every attempt. A zone id (`fe80::1%eth0`) is dropped.
 *
 * Anything else (no address: the socket is already gone) is returned as it is.
 */
export function clientKey(address: string | undefined): string {
  if (address === undefined) return '';
  if (isIPv4(address)) return address;
  const zone = address.indexOf('%');
  const bare = zone < 0 ? address : address.slice(0, zone);
  if (!isIPv6(bare)) return address;
  const groups = ipv6Groups(bare);
  // ::ffff:0:0/96, however written (the last 32 bits may be dotted or two hex groups).
  if (groups[5] === 0xffff && groups.slice(0, 5).every((g) => g === 0)) {
    const [hi = 0, lo = 0] = groups.slice(6);
    return ipv4Of(hi, lo);
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/** proxy-addr's named ranges (what Fastify's trustProxy, and so TRUST_PROXY, accepts). */
const NAMED_RANGES: Record<string, ReadonlyArray<readonly [string, number, 'ipv4' | 'ipv6']>> = {
  loopback: [['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']],
  linklocal: [['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']],
  uniquelocal: [['10.0.0.0', 8, 'ipv4'], ['172.16.0.0', 12, 'ipv4'], ['192.168.0.0', 16, 'ipv4'], ['fc00::', 7, 'ipv6']],
};

/**
 * Whether a connection's address is one of TRUST_PROXY's proxies: the same entries Fastify trusts
 * X-Forwarded-For from (addresses, CIDRs, named ranges; the configuration has checked them). Returns
 * undefined when no proxy is trusted, so that the caller asks nothing.
 */
export function trustedProxies(trustProxy: TrustProxy): ((address: string | undefined) => boolean) | undefined {
  if (trustProxy === false) return undefined;
  const list = new BlockList();
  for (const raw of trustProxy.split(',')) {
    const entry = raw.trim();
    const named = NAMED_RANGES[entry];
    if (named) {
      for (const [network, prefix, family] of named) list.addSubnet(network, prefix, family);
      continue;
    }
    const [address = '', prefix] = entry.split('/');
    const bare = address.replace(/%.*$/, '');
    const family = isIPv4(bare) ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(bare, family);
    else list.addSubnet(bare, Number(prefix), family);
  }
  return (address) => {
    if (address === undefined) return false;
    const key = clientKey(address);
    // clientKey gives IPv4 for IPv4 and mapped addresses; an IPv6 address is checked as it is.
    return isIPv4(key) ? list.check(key, 'ipv4') : list.check(address.replace(/%.*$/, ''), 'ipv6');
  };
}
