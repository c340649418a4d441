import type { FastifyInstance } from 'fastify';
import { Type, type TSchema, type TUnsafe } from 'typebox';
import { NewPlantSchema, PlantSchema } from '../domain/plant.js';
import { ERROR_ROWS, ERRORS, type ErrorRow } from './errors.js';

/** The two kinds of bearer token (openapi.ts describes them): `pst_…` opaque tokens and JWT access tokens. */
export const OPAQUE_SCHEME_NAME = 'opaqueToken';
export const JWT_SCHEME_NAME = 'jwt';
/** Either kind of token will do: the security requirements are alternatives. */
export const SECURITY = [{ [OPAQUE_SCHEME_NAME]: [] }, { [JWT_SCHEME_NAME]: [] }];

/**
 * What any route behind a bearer token can answer about the token and its caller (50302: a JWT whose key
 * cannot be fetched from the identity provider).
 */
export const AUTHENTICATION_ERRORS = [
  ERRORS.missingToken, ERRORS.invalidToken, ERRORS.insufficientScope, ERRORS.authFailuresLimited, ERRORS.rateLimited,
  ERRORS.identityProviderUnavailable,
];

/** The table of every row, in Markdown: the `Error` schema's description in /openapi.json, and docs/api.md's table. */
export function errorTableMarkdown(): string {
  const rows = ERROR_ROWS.map((r) => `| ${r.code} | ${r.status} | ${r.message} |`);
  return ['| error | status | meaning |', '|---|---|---|', ...rows].join('\n');
}

export const ErrorSchema = Type.Object(
  {
    error: Type.Integer({
      format: 'int32',
      enum: ERROR_ROWS.map((r) => r.code),
      description: 'HTTP status × 100 + detail; see the table in this schema\'s description',
    }),
    message: Type.String(),
  },
  {
    $id: 'Error',
    additionalProperties: false,
    // The whole table lives here, in a section of its own further down /docs, so that the page opens on
    // Authorize and the operations rather than on thirty rows of codes.
    description: [
      'The body of every non-2xx answer. `error` is stable: the HTTP status × 100 + a detail number; `message` adds detail ' +
        'for the client (which field, which scope), and a 5xx\'s carries a request id, never internal text.',
      '',
      errorTableMarkdown(),
    ].join('\n'),
  },
);

/**
 * The schemas every part of the API shares, referenced by $id and published under components.schemas:
 * Plant and NewPlant (the domain's; the document's `webhooks` section names NewPlant too) and Error (every
 * route's error answers). A route's own schemas are added by its plugin (routes/<resource>/schemas.ts),
 * in its scope; @fastify/swagger publishes those of every scope, shared ones first.
 */
export function addSharedSchemas(app: FastifyInstance): void {
  for (const schema of [PlantSchema, NewPlantSchema, ErrorSchema]) app.addSchema(schema);
}

/**
 * A reference to a schema added by $id (the shared ones above, or a route's own), typed as `T`: a route
 * names the schema object itself, so a reference cannot name a schema that does not exist.
 */
export function ref<T = unknown>(schema: TSchema): TUnsafe<T> {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id !== 'string') throw new Error('ref: the schema has no $id');
  return Type.Unsafe<T>(Type.Ref(id));
}

/** A route schema's mark for a body that may be left out (openapi.ts publishes it as not required). */
export const OPTIONAL_BODY = 'x-optional-body';

/**
 * A route schema's header parameters for the document only (openapi.ts adds them to the operation's
 * parameters): Fastify validates headers with its own builder, which the apps that share builders lack,
 * so a route that reads an optional header checks it by hand and describes it here.
 */
export const HEADER_PARAMETERS = 'x-header-parameters';

/**
 * The tags of the published document, in its order; openapi.ts describes them and each route names one.
 * A route naming another tag would fail the lint test (spectral's operation-tag-defined).
 */
export const TAG = {
  plants: 'plants',
  webhooks: 'webhooks',
  tokens: 'tokens',
  operations: 'operations',
  document: 'document',
} as const;

/**
 * What any request can be answered, whatever its route, before the route's own steps run: a malformed
 * request (URL, headers, framing, no Host: 40000), one not received within REQUEST_TIMEOUT_MS (40800, by
 * the parser), a URL over MAX_URL_LENGTH (41400), an Expect other than 100-continue (41700), headers over
 * MAX_HEADER_SIZE (43100, by the parser), an internal error (50000), and a connection refused because its
 * client address holds its share while the server is near MAX_CONNECTIONS (50303).
 */
const ANY_REQUEST: readonly ErrorRow[] = [
  ERRORS.badRequest, ERRORS.requestTimeout, ERRORS.urlTooLong, ERRORS.expectationFailed, ERRORS.headersTooLarge, ERRORS.internal,
  ERRORS.tooManyConnections,
];

/** What a route that uses the store can answer besides: a store out of reach (50300), an instance starting or draining (50301). */
const STORE_ROUTE: readonly ErrorRow[] = [ERRORS.storeUnavailable, ERRORS.notServing];

/**
 * What a request with a body can be answered: POST, and DELETE too, since Fastify reads a body sent with
 * a DELETE (a JSON one is parsed, anything else refused), though no DELETE here takes one.
 */
export const BODY_ERRORS: readonly ErrorRow[] = [ERRORS.malformedJson, ERRORS.bodyTooLarge, ERRORS.unsupportedMediaType];

/** The rows as responses, one per status, each described by the codes it can carry (in code order). */
function responsesOf(rows: readonly ErrorRow[]): Record<number, unknown> {
  const all = [...new Set(rows)].sort((a, b) => a.code - b.code);
  const statuses = [...new Set(all.map((r) => r.status))].sort((a, b) => a - b);
  return Object.fromEntries(
    statuses.map((status) => {
      const description = all
        .filter((r) => r.status === status)
        .map((r) => `${r.code}: ${r.message}`)
        .join('; ');
      return [status, { description, ...ref(ErrorSchema) }];
    }),
  );
}

/**
 * The error responses of an operation that uses the store: the route's own rows, and those any request
 * (ANY_REQUEST) and any route that uses the store (STORE_ROUTE) can be answered.
 */
export function errorResponses(...rows: ErrorRow[]): Record<number, unknown> {
  return responsesOf([...ANY_REQUEST, ...rows, ...STORE_ROUTE]);
}

/** The error responses of an operation that does not use the store (/healthz, /openapi.json): those of any request. */
export function requestErrorResponses(...rows: ErrorRow[]): Record<number, unknown> {
  return responsesOf([...ANY_REQUEST, ...rows]);
}
