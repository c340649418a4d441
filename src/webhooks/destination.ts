import { BlockList, isIP } from 'node:net';
import { ipv4Of, ipv6Groups } from '../domain/ip.js';

/** Longest URL a webhook endpoint may have. */
export const WEBHOOK_URL_MAX_CHARS = 2048;

/**
 * Addresses a webhook is never sent to (unless WEBHOOK_ALLOW_PRIVATE=on): whatever is not the public
 * internet, where a request from this server could reach what its network trusts (SSRF) — loopback,
 * private and unique-local ranges, link-local (cloud metadata at 169.254.169.254), unspecified,
 * multicast and broadcast, carrier-grade NAT, and the reserved and documentation ranges. An IPv6
 * address that carries an IPv4 address (see embeddedIPv4) is also judged as that IPv4 address.
 */
const FORBIDDEN = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  FORBIDDEN.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215): translates into the operator's own network
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation (RFC 9637)
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  FORBIDDEN.addSubnet(network, prefix, 'ipv6');
}

/**
 * The IPv4 address an IPv6 address stands for, when it is one of the forms that reach an IPv4 host
 * (a connection to them is a connection to that host, or the address is only ever a stand-in for it):
 * IPv4-compatible `::a.b.c.d` (`::` and `::1` fall here too, as 0.0.0.0 and 0.0.0.1), IPv4-mapped
 * `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:AABB:CCDD::`
 * and Teredo's client (`2001:0::`, its last 32 bits inverted). Checking the IPv4 address inside, rather
 * than refusing the whole range, keeps NAT64 working for IPv6-only hosts, whose DNS64 resolver gives
 * every IPv4-only receiver a 64:ff9b:: address.
 */
function embeddedIPv4(g: readonly number[]): string | null {
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = g;
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0) {
    if (g4 === 0 && (g5 === 0 || g5 === 0xffff)) return ipv4Of(g6, g7);
    if (g4 === 0xffff && g5 === 0) return ipv4Of(g6, g7);
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return ipv4Of(g6, g7);
  if (g0 === 0x2002) return ipv4Of(g1 ?? 0, g2 ?? 0);
  if (g0 === 0x2001 && g1 === 0) return ipv4Of(~g6 & 0xffff, ~g7 & 0xffff);
  return null;
}

/**
 * Whether `address` (an IP address as text, in any spelling) is one webhooks may not be sent to. A
 * non-address is forbidden. Registration and every delivery (the resolved addresses of a name, or the
 * literal of a URL) ask this one function.
 */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 4) return FORBIDDEN.check(address, 'ipv4');
  const groups = ipv6Groups(address);
  const embedded = embeddedIPv4(groups);
  if (embedded !== null && FORBIDDEN.check(embedded, 'ipv4')) return true;
  return FORBIDDEN.check(groups.map((n) => n.toString(16)).join(':'), 'ipv6');
}

/**
 * The host of a parsed URL as an IP address when it is one, else null: brackets removed, and trailing
 * dots, which the URL parser keeps on a name (`127.0.0.1..` is a name to it, and a resolver may read it
 * as the address).
 */
export function literalAddress(url: URL): string | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname.replace(/\.+$/, '');
  return isIP(host) === 0 ? null : host;
}

/**
 * Names that are loopback by definition (RFC 6761: `localhost` and every name under it), in any case,
 * with or without the trailing dots of a fully qualified name (`localhost.`, `foo.localhost.`).
 */
export function isLoopbackName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * Why `text` cannot be a webhook URL, or null when it can: an absolute http: or https: URL of at most
 * 2048 characters, with a host and no credentials; unless `allowPrivate`, not a literal internal address
 * (a name is checked after each resolution, when delivering: see sender.ts). The URL parser normalizes
 * hosts first, so 0x7f.1 and 2130706433 are seen as the 127.0.0.1 they are, and [::127.0.0.1] as ::7f00:1.
 */
export function webhookUrlProblem(text: string, allowPrivate: boolean): { reason: string; privateAddress: boolean } | null {
  // Code points, as a schema's maxLength counts them (an emoji is one character, not two).
  if ([...text].length > WEBHOOK_URL_MAX_CHARS) return { reason: `must be at most ${WEBHOOK_URL_MAX_CHARS} characters`, privateAddress: false };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { reason: 'must be an absolute http: or https: URL', privateAddress: false };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { reason: 'must be an http: or https: URL', privateAddress: false };
  if (url.hostname === '') return { reason: 'must name a host', privateAddress: false };
  if (url.username !== '' || url.password !== '') return { reason: 'must not contain credentials (user:password@)', privateAddress: false };
  if (allowPrivate) return null;
  const address = literalAddress(url);
  if ((address !== null && isForbiddenAddress(address)) || (address === null && isLoopbackName(url.hostname))) {
    return { reason: 'must not point at a loopback, private, link-local, unspecified or multicast address', privateAddress: true };
  }
  return null;
}
