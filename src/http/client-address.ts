import { isIPv4, isIPv6 } from 'node:net';

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
    return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (without zone), `::` expanded, a dotted tail as two groups. */
function ipv6Groups(address: string): number[] {
  const parse = (part: string): number[] => {
    if (part === '') return [];
    const groups: number[] = [];
    for (const piece of part.split(':')) {
      if (piece.includes('.')) {
        const [a = 0, b = 0, c = 0, d = 0] = piece.split('.').map(Number);
        groups.push((a << 8) | b, (c << 8) | d);
      } else {
        groups.push(parseInt(piece, 16));
      }
    }
    return groups;
  };
  const gap = address.indexOf('::');
  if (gap < 0) return parse(address);
  const head = parse(address.slice(0, gap));
  const tail = parse(address.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}
