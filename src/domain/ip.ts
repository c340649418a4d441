/**
 * IPv6 addresses as numbers, for the checks that must see through their many spellings: the webhook
 * destination rules (webhooks/destination.ts) and the client a limit counts against (http/client-address.ts).
 */

/**
 * The eight 16-bit groups of a valid IPv6 address in any spelling: `::` expanded, a trailing dotted quad
 * as two groups, a zone (`%eth0`) dropped.
 */
export function ipv6Groups(address: string): number[] {
  let text = address.split('%')[0] as string;
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const part = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const front = part(head);
  if (tail === undefined) return front;
  const back = part(tail);
  return [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/** The dotted IPv4 address of two 16-bit groups. */
export const ipv4Of = (high: number, low: number): string => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
