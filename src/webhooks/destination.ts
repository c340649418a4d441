import { BlockList, isIP } from 'node:net';

/** Longest URL a webhook endpoint may have. */
export const WEBHOOK_URL_MAX_CHARS = 2048;

/**
 * Addresses a webhook is never sent to (unless WEBHOOK_ALLOW_PRIVATE=on): whatever is not the public
 * internet, where a request from this server could reach what its network trusts (SSRF) — loopback,
 * private and unique-local ranges, link-local (cloud metadata at 169.254.169.254), unspecified,
 * multicast and broadcast, carrier-grade NAT, and the reserved and documentation ranges. IPv4-mapped
 * IPv6 addresses (::ffff:127.0.0.1) are checked as the IPv4 address they are (BlockList does so).
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
  ['64:ff9b::', 96], // NAT64: embeds an IPv4 address that may be private
  ['64:ff9b:1::', 48],
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  FORBIDDEN.addSubnet(network, prefix, 'ipv6');
}

/** Whether `address` (an IP address as text) is one webhooks may not be sent to. A non-address is forbidden. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return FORBIDDEN.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The host of a parsed URL as an IP address when it is one (brackets removed), else null. */
function literalAddress(url: URL): string | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) === 0 ? null : host;
}

/**
 * Why `text` cannot be a webhook URL, or null when it can: an absolute http: or https: URL of at most
 * 2048 characters, with a host and no credentials; unless `allowPrivate`, not a literal internal address
 * (a name is checked after each resolution, when delivering: see sender.ts). The URL parser normalizes
 * hosts first, so 0x7f.1 and 2130706433 are seen as the 127.0.0.1 they are.
 */
export function webhookUrlProblem(text: string, allowPrivate: boolean): { reason: string; privateAddress: boolean } | null {
  if (text.length > WEBHOOK_URL_MAX_CHARS) return { reason: `must be at most ${WEBHOOK_URL_MAX_CHARS} characters`, privateAddress: false };
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
  const host = url.hostname.toLowerCase();
  if ((address !== null && isForbiddenAddress(address)) || host === 'localhost' || host.endsWith('.localhost')) {
    return { reason: 'must not point at a loopback, private, link-local, unspecified or multicast address', privateAddress: true };
  }
  return null;
}
