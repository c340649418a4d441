/**
 * On every answer: JSON is never to be sniffed as something else, never framed, never executed as a
 * document, and never cached (lists are private to their token). Node adds no X-Powered-By, nor does
 * Fastify.
 */
export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cache-control': 'no-store',
} as const;
