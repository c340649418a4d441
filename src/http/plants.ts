import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { isInt64, parseInt64 } from '../domain/int64.js';
import { plantOf, PlantTag, type NewPlantBody } from '../domain/plant.js';
import type { Store } from '../store/store.js';
import { bearerAuth, type AuthLimits } from './auth.js';
import { CURSOR_PATTERN, PageCursors } from './cursor.js';
import { ApiError, ERRORS } from './errors.js';
import { exactId } from './json.js';
import { errorResponses, ref, SECURITY } from './schemas.js';

const LIMIT_DEFAULT = 100;
const LIMIT_MAX = 1000;

const ListQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: LIMIT_MAX, default: LIMIT_DEFAULT, description: 'Maximum number of plants to return' }),
  ),
  tag: Type.Optional(PlantTag),
  cursor: Type.Optional(
    Type.String({ pattern: CURSOR_PATTERN, description: 'Opaque position from a Link rel="next" URL' }),
  ),
});

/** What any route behind a bearer token can answer about the token and its caller. */
const AUTHENTICATION_ERRORS = [
  ERRORS.missingToken, ERRORS.invalidToken, ERRORS.insufficientScope, ERRORS.authFailuresLimited, ERRORS.rateLimited,
];

const DeleteParams = Type.Object({
  id: Type.String({ pattern: '^-?[0-9]{1,20}$', description: 'The plant id, a decimal 64-bit signed integer' }),
});

/**
 * RFC 8288 link to the next page: same limit and filters, relative to this service's root. The cursor is
 * base64url, which needs no escaping in a URL; the tag is escaped.
 */
function nextLink(query: Static<typeof ListQuery> & { limit: number }, cursor: string): string {
  const tag = query.tag === undefined ? '' : `&tag=${encodeURIComponent(query.tag)}`;
  return `</plants?limit=${query.limit}${tag}&cursor=${cursor}>; rel="next"`;
}

export async function plantRoutes(app: FastifyInstance, { store, limits }: { store: Store; limits: AuthLimits }): Promise<void> {
  const requireScope = bearerAuth(store, limits);
  const cursors = new PageCursors(store);

  app.post(
    '/plants',
    {
      onRequest: requireScope('plants:write'),
      schema: {
        summary: 'Create a plant',
        description:
          'Stores the plant for the calling user. Repeating a create with the same id and content is an idempotent retry (200, nothing duplicated); the same id with different content is 409.',
        security: SECURITY,
        body: ref<NewPlantBody>('NewPlant'),
        response: {
          200: ref('Plant'),
          ...errorResponses(
            ERRORS.malformedJson, ERRORS.invalidNewPlant, ...AUTHENTICATION_ERRORS,
            ERRORS.idConflict, ERRORS.bodyTooLarge, ERRORS.unsupportedMediaType,
          ),
        },
      },
    },
    async (request) => {
      const body = request.body as NewPlantBody;
      // Integer-ness is decided on the literal's exact decimal value (json.ts): 1e3 is 1000, while
      // 2.00000000000000001 is not an integer though its nearest double is.
      const id = exactId(body);
      if (id === null || !isInt64(id)) {
        const reason = id === null ? 'must be an integer (1e3 and 1000.0 are; 1.5 and 2.00000000000000001 are not)' : 'must be a 64-bit signed integer';
        throw new ApiError(ERRORS.invalidNewPlant, `${ERRORS.invalidNewPlant.message}: id ${reason}`);
      }
      const plant = body.tag === undefined ? { id, name: body.name } : { id, name: body.name, tag: body.tag };
      if ((await store.createPlant(request.principal.user, plant)) === 'conflict') {
        throw new ApiError(ERRORS.idConflict, `${ERRORS.idConflict.message}: ${id}`);
      }
      return plantOf(plant);
    },
  );

  app.get(
    '/plants',
    {
      onRequest: requireScope('plants:read'),
      schema: {
        summary: 'List plants',
        description:
          'The caller\'s plants (an admin token: every user\'s), oldest first. When more remain, a `Link: <…>; rel="next"` header gives the URL of the next page.',
        security: SECURITY,
        querystring: ListQuery,
        response: {
          200: {
            description: 'A page of plants; `Link` rel="next" when more remain',
            headers: { Link: { type: 'string', description: 'RFC 8288 link to the next page' } },
            ...Type.Array(ref('Plant')),
          },
          ...errorResponses(ERRORS.invalidQuery, ...AUTHENTICATION_ERRORS),
        },
      },
    },
    async (request, reply) => {
      // ajv has filled in the default limit.
      const query = request.query as Static<typeof ListQuery> & { limit: number };
      const owner = request.principal.admin ? null : request.principal.user;
      const listing = {
        owner,
        tag: query.tag,
        after: query.cursor === undefined ? undefined : await cursors.open(query.cursor, { owner, tag: query.tag }),
        limit: query.limit,
      };
      const page = await store.listPlants(listing);
      if (page.next !== null) reply.header('link', nextLink(query, cursors.known(page, listing) ?? (await cursors.seal(page, listing))));
      // A page the store keeps (a cached one) carries its JSON text: sent as it is, not serialized again.
      if (page.json !== undefined) return reply.type('application/json; charset=utf-8').send(page.json);
      return page.plants;
    },
  );

  app.delete(
    '/plants/:id',
    {
      onRequest: requireScope('plants:write'),
      schema: {
        summary: 'Delete a plant',
        description: 'Deletes the caller\'s plant with this id (an admin deletes only its own plants, too).',
        security: SECURITY,
        params: DeleteParams,
        response: {
          204: { description: 'Deleted', type: 'null' },
          ...errorResponses(ERRORS.invalidPath, ...AUTHENTICATION_ERRORS, ERRORS.plantNotFound),
        },
      },
    },
    async (request, reply) => {
      const id = parseInt64((request.params as Static<typeof DeleteParams>).id);
      if (id === null) throw new ApiError(ERRORS.invalidPath);
      if (!(await store.deletePlant(request.principal.user, id))) throw new ApiError(ERRORS.plantNotFound);
      return reply.code(204).send();
    },
  );
}
