import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { HEADER_PARAMETERS, JWT_SCHEME_NAME, OPAQUE_SCHEME_NAME, OPTIONAL_BODY, requestErrorResponses, TAG } from './schemas.js';

export { errorTableMarkdown } from './schemas.js';

export const API_VERSION = '1.0.0';

const SCOPES_TEXT =
  'Scopes: plants:read (list plants), plants:write (create, delete plants), webhooks:manage (the /webhooks operations); ' +
  'the /tokens operations need none beyond the token (POST /tokens: an admin token).';

/** The document as @fastify/swagger takes it: this one is OpenAPI 3.1. */
type Document31 = Extract<NonNullable<FastifyDynamicSwaggerOptions['openapi']>, { webhooks?: unknown }>;

const header = (name: string, description: string, example: string) => ({
  name, in: 'header' as const, required: true, description, schema: { type: 'string' as const }, example,
});

/**
 * The `webhooks` section of the published Plant Store document (OpenAPI 3.1): what plantstore sends to
 * every registered endpoint (POST /webhooks) when a plant is added, with the Standard Webhooks headers
 * that let the receiver check that it came from this server.
 */
export const WEBHOOKS: Document31['webhooks'] = {
  '/plant/webhook': {
    post: {
      summary: 'A plant was added',
      description: 'Information about a new plant added to the store',
      operationId: 'plantAdded',
      tags: [TAG.webhooks],
      // The receiver needs no token of ours: the webhook-signature header authenticates the call.
      security: [],
      parameters: [
        header(
          'webhook-id',
          'The event id: the same on every attempt of one event to one endpoint; deduplicate by it (delivery is at least once)',
          'msg_019b76daa8004f1d2a9c8b7e6d5c4b3a',
        ),
        header('webhook-timestamp', 'Unix seconds when this attempt was sent; refuse ones too far from now (replays)', '1767225600'),
        header(
          'webhook-signature',
          '`v1,` + base64 of HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the base64-decoded part of the endpoint\'s ' +
            'secret after `whsec_` (Standard Webhooks; the `standardwebhooks` libraries verify it). While a rotated secret\'s overlap ' +
            'lasts (POST /webhooks/{id}/rotate-secret), two, space-separated: `v1,<new> v1,<old>`; accept the request when one matches',
          'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
        ),
        {
          ...header('webhook-test', 'Present, `true`, on a test event only (POST /webhooks/{id}/test): no plant was added', 'true'),
          required: false,
        },
      ],
      requestBody: {
        description: 'Plant added to the store: the NewPlant as stored, its id with every digit',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/NewPlant' } } },
      },
      responses: {
        200: { description: 'Return a 200 status to indicate that the data was received successfully' },
      },
    },
  },
};

/** The tags of the document, each described; routes name them by TAG (schemas.ts). */
const TAGS = [
  { name: TAG.plants, description: 'Create, list and delete the caller\'s plants' },
  {
    name: TAG.webhooks,
    description: 'Register endpoints that receive every new plant (see the `webhooks` section), and read their delivery attempts',
  },
  { name: TAG.tokens, description: 'Create (admin tokens only), list and revoke opaque bearer tokens' },
  { name: TAG.operations, description: 'Health checks for load balancers and orchestrators; no token' },
  { name: TAG.document, description: 'This OpenAPI document; no token' },
];

/** The part of the document optionalBodies goes through. */
interface OpenApiPaths {
  paths?: Record<string, Record<string, {
    requestBody?: { required?: boolean };
    parameters?: unknown[];
    [OPTIONAL_BODY]?: boolean;
    [HEADER_PARAMETERS]?: unknown[];
  }>>;
}

/**
 * A route's header parameters described by hand are added to its parameters (HEADER_PARAMETERS). A route
 * whose schema says `[OPTIONAL_BODY]: true` may be called without a body (it validates an absent
 * one as `{}`): @fastify/swagger marks every body required, so the mark is turned into `required: false`.
 */
function optionalBodies<T extends OpenApiPaths>(document: T): T {
  for (const methods of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(methods)) {
      // A route's header parameters described by hand (schemas.ts HEADER_PARAMETERS).
      const headers = operation[HEADER_PARAMETERS];
      if (headers !== undefined) {
        delete operation[HEADER_PARAMETERS];
        operation.parameters = [...(operation.parameters ?? []), ...headers];
      }
      if (operation[OPTIONAL_BODY] !== true) continue;
      delete operation[OPTIONAL_BODY];
      if (operation.requestBody) operation.requestBody.required = false;
    }
  }
  return document;
}

/** The OpenAPI document is generated from the route schemas; nothing here repeats a route. */
export async function openApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Plant Store API',
        version: API_VERSION,
        // The license as package.json and LICENSE say. Spectral's info-contact asks for a contact: the LICENSE's
        // copyright holders, since the project publishes no address.
        license: { name: 'MIT', identifier: 'MIT' },
        contact: { name: 'plantstore authors' },
        // A few lines: /docs shows this above Authorize and the operations, which must stay on the first
        // screen. The error table is the Error schema's description (schemas.ts).
        description: [
          'Create, list and delete plants, and subscribe to new ones with webhooks.',
          '',
          'Every `/plants`, `/webhooks` and `/tokens` call needs `Authorization: Bearer <token>`: an opaque token (`pst_…`, from ' +
            '`plantstore token create` or POST /tokens) or, when the server is configured for it, a JWT access token from your ' +
            'identity provider. Press **Authorize** and paste it under `opaqueToken` (or `jwt`).',
          '',
          'Every non-2xx answer is an `Error`, `{"error": <int32>, "message": <text>}`; its codes are listed under Schemas, in `Error`.',
        ].join('\n'),
      },
      // Relative: the document describes the server that serves it, wherever it is reached.
      servers: [{ url: '/', description: 'This server' }],
      tags: TAGS,
      webhooks: WEBHOOKS,
      components: {
        securitySchemes: {
          [OPAQUE_SCHEME_NAME]: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'pst_…',
            description:
              'An opaque token from `plantstore token create` or POST /tokens. ' + SCOPES_TEXT +
              ' Admin: a token created with `--admin` (or `"admin": true`).',
          },
          [JWT_SCHEME_NAME]: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description:
              'A JWT access token from the identity provider the server is configured with (JWT_ISSUER, found by OpenID Connect discovery, ' +
              'or JWT_JWKS_URL), whose `aud` contains JWT_AUDIENCE; its user is the JWT_USER_CLAIM claim (default `sub`), the same user as ' +
              'an opaque token\'s. Scopes come from `scope` or `scp`: ' + SCOPES_TEXT + ' `plants:admin` makes it an admin token. ' +
              'Unconfigured servers accept no JWT.',
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transformObject: (documentObject) => optionalBodies((documentObject as { openapiObject: OpenApiPaths }).openapiObject),
  });
  app.get(
    '/openapi.json',
    {
      schema: {
        summary: 'This document',
        description: 'The OpenAPI 3.1 description of this API, generated from the routes it serves. No token.',
        operationId: 'getOpenApi',
        tags: [TAG.document],
        security: [],
        response: {
          // Any object: fast-json-stringify then writes every property as JSON.stringify would, so the
          // document goes out as it is.
          200: { description: 'The OpenAPI document', type: 'object', additionalProperties: true },
          ...requestErrorResponses(),
        },
      },
    },
    async () => app.swagger(),
  );
}
