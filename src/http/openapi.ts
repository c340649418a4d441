import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { ERROR_ROWS } from './errors.js';
import { BEARER_SCHEME_NAME } from './schemas.js';

export const API_VERSION = '1.0.0';

export function errorTableMarkdown(): string {
  const rows = ERROR_ROWS.map((r) => `| ${r.code} | ${r.status} | ${r.message} |`);
  return ['| error | status | meaning |', '|---|---|---|', ...rows].join('\n');
}

/** The OpenAPI document is generated from the route schemas; nothing here repeats a route. */
export async function openApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Plant Store API',
        version: API_VERSION,
        description: [
          'Create and list plants. Every `/plants` call needs `Authorization: Bearer <token>`.',
          '',
          'Every non-2xx answer has the body `{"error": <int32>, "message": <text>}`, where `error` is HTTP status × 100 + a detail number:',
          '',
          errorTableMarkdown(),
        ].join('\n'),
      },
      components: {
        securitySchemes: {
          [BEARER_SCHEME_NAME]: {
            type: 'http',
            scheme: 'bearer',
            description: 'An opaque token from `plantstore token create`. Scopes: plants:read (list), plants:write (create, delete).',
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
