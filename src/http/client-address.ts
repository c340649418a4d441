import { BlockList, isIPv4, isIPv6, SocketAddress } from 'node:net';
import type { FastifyRequest } from 'fastify';
import type { TrustProxy } from '../config/values.js';
import { ipv4Of, ipv6Groups } from '../domain/ip.js';

const BRACKETED = /^\[([^\]]*)\](?::\d{1,5})?$/;
const IPV4_WITH_PORT = /^([\d.]+):\d{1,5}$/;

/**
 * An address as a socket reports it or as a proxy writes it in X-Forwarded-For, in one spelling; undefined
 * when it cannot be read. Some proxies append the client's port (`192.0.2.1:40001`,
 * `[2001:db8::1]:40001`) or bracket an IPv6 address (`[2001:db8::1]`): the port and brackets are dropped.
 * An IPv6 address is written as node:net writes it (lower case, `::` compressed, no zone id), and an
 * IPv4-mapped one (`::ffff:192.0.2.1`) as its IPv4 address.
 *
 * IPv4 is read as node:net reads it: four decimal numbers without leading zeros. `010.0.0.1` is 8.0.0.1
 * to inet_aton and to ipaddr.js (octal), but 10.0.0.1 to a reader of decimals; no proxy writes a socket's
 * address that way, so rather than pick a reading such an entry is unreadable, like any other text.
 */
export function readAddress(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const entry = text.trim();
  const bracketed = BRACKETED.exec(entry);
  const bare = bracketed ? (bracketed[1] as string) : (IPV4_WITH_PORT.exec(entry)?.[1] ?? entry);
  if (isIPv4(bare)) return bracketed ? undefined : bare; // brackets are for IPv6 (RFC 3986)
  if (!isIPv6(bare)) return undefined;
  const groups = ipv6Groups(bare);
  // ::ffff:0:0/96, however written (the last 32 bits may be dotted or two hex groups).
  if (groups[5] === 0xffff && groups.slice(0, 5).every((g) => g === 0)) {
    const [hi = 0, lo = 0] = groups.slice(6);
    return ipv4Of(hi, lo);
  }
  return new SocketAddress({ address: bare.split('%')[0] as string, family: 'ipv6' }).address;
}

/**
 * The client a limit counts against, given its address in any spelling readAddress reads (a socket's
 * remoteAddress, or clientAddress's answer):
 *
 * - IPv4: the address itself (`192.0.2.1`).
 * - IPv4-mapped IPv6 (`::ffff:192.0.2.1`, what a dual-stack listener reports for an IPv4 client): that
 *   IPv4 address, so that one client is one key whichever way the server listens.
 * - Any other IPv6 address: its /64 (`2001:db8:1:2::/64`). A /64 is what one subscriber, one LAN or one
 *   host is given (RFC 6177, RFC 7934), and it holds 2^64 addresses: keyed by the exact address, a client
 *   could take a new one for every attempt. A zone id (`fe80::1%eth0`) is dropped.
 *
 * Anything unreadable (no address: the socket is already gone) is returned as it is: clientAddress never
 * gives such a thing, and a socket's address is either readable or absent.
 */
export function clientKey(address: string | undefined): string {
  if (address === undefined) return '';
  const read = readAddress(address);
  if (read === undefined) return address;
  if (isIPv4(read)) return read;
  return `${ipv6Groups(read).slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/**
 * A request's client address, read (readAddress), for everything that keys on it: the failed-
 * authentication limit and the access log. Without TRUST_PROXY that is the connection's address. Behind
 * a trusted proxy it is the X-Forwarded-For entry Fastify stopped at (the first, from the right, that is
 * not a trusted proxy); when that entry cannot be read, it is the address of the proxy that wrote it.
 * Counted as themselves, unreadable entries would each be a client of their own, and a client could
 * write a new one for every guess; counted as their proxy's, they share one budget.
 */
export function clientAddress(request: FastifyRequest): string {
  // request.ips is the chain from the connection's address to that entry; undefined without TRUST_PROXY.
  const chain = request.ips ?? [request.ip];
  const client = chain[chain.length - 1];
  const proxy = chain[chain.length - 2];
  return readAddress(client) ?? readAddress(proxy) ?? client ?? '';
}

/** proxy-addr's named ranges (what Fastify's trustProxy, and so TRUST_PROXY, accepts). */
const NAMED_RANGES: Record<string, ReadonlyArray<readonly [string, number, 'ipv4' | 'ipv6']>> = {
  loopback: [['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']],
  linklocal: [['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']],
  uniquelocal: [['10.0.0.0', 8, 'ipv4'], ['172.16.0.0', 12, 'ipv4'], ['192.168.0.0', 16, 'ipv4'], ['fc00::', 7, 'ipv6']],
};

/**
 * Whether an address is one of TRUST_PROXY's proxies (addresses, CIDRs, named ranges; the configuration has
 * checked them), however readAddress may find it spelled. Fastify is given this function as its
 * trustProxy, so the connection limiter and X-Forwarded-For agree on who is a proxy, and an entry with
 * a port is read as its address: proxy-addr, Fastify's own, takes no port and reads `012.0.0.5` as
 * octal, 10.0.0.5. Returns undefined when no proxy is trusted, so that the caller asks nothing.
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
    const read = readAddress(address);
    if (read === undefined) return false;
    return list.check(read, isIPv4(read) ? 'ipv4' : 'ipv6');
  };
}
