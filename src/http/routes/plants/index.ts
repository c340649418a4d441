import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { EXACT_INT64 } from '../../../domain/int64.js';
import { NewPlantSchema, plantOf, PlantSchema, PlantTag, type NewPlantBody, type Plant } from '../../../domain/plant.js';
import type { FastifyReply } from 'fastify';
import type { ListQuery, PlantPage, Store } from '../../../store/store.js';
import { requireScope, type AuthSteps } from '../../auth/index.js';
import { PageCursors } from './cursor.js';
import { CURSOR_PATTERN } from './cursor-form.js';
import { ApiError, ERRORS } from '../../errors.js';
import { AUTHENTICATION_ERRORS, BODY_ERRORS, errorResponses, ref, SECURITY, TAG } from '../../schemas.js';

const LIMIT_DEFAULT = 100;
const LIMIT_MAX = 1000;

const ListQuery = Type.Object({
  limit: Type.Optional(
    // int32, as the published document types it, so that generated clients take the same type.
    Type.Integer({ format: 'int32', minimum: 1, maximum: LIMIT_MAX, default: LIMIT_DEFAULT, description: 'Maximum number of plants to return' }),
  ),
  tag: Type.Optional(PlantTag),
  cursor: Type.Optional(
    Type.String({
      pattern: CURSOR_PATTERN,
      description:
        'Opaque position from a Link rel="next" URL, for the same listing (user and tag). The pattern gives only its alphabet and ' +
        'length: a cursor is sealed, so one of that form that this server did not issue for this listing is refused too (400, 40003)',
    }),
  ),
});

const DeleteParams = Type.Object({
  // An int64 integer, as NewPlant's id and as in the published document, so that generated clients take
  // the same type for both. Its digits are read exactly (strictParams in http/plugins/query.ts keeps them for the
  // EXACT_INT64 keyword, which hands on the bigint): past 2^53 too.
  id: Type.Unsafe<bigint>(
    Type.Integer({ format: 'int64', [EXACT_INT64]: true, description: 'The plant id: a 64-bit signed integer in decimal digits, read exactly' }),
  ),
});

/**
 * RFC 8288 link to the next page: same limit and filters, relative to this service's root. The cursor is
 * base64url, which needs no escaping in a URL; the tag is escaped.
 */
function nextLink(query: PageQuery, cursor: string): string {
  const tag = query.tag === undefined ? '' : `&tag=${encodeURIComponent(query.tag)}`;
  return `</plants?limit=${query.limit}${tag}&cursor=${cursor}>; rel="next"`;
}

/** What a next link repeats of a listing. */
interface PageQuery {
  readonly limit: number;
  readonly tag?: string | undefined;
}

/** A listing whose cursor is still to be opened. */
interface Unopened {
  readonly owner: string | null;
  readonly tag: string | undefined;
  readonly cursor: string;
  readonly limit: number;
}

/**
 * What the list route returns for `page` (Fastify sends it): its JSON text as it is when the store keeps
 * it with the page (a cached one), not serialized again; else its plants, shared and read-only (see
 * PlantPage), which the route's schema serializes. `next` is the cursor of the page after, if any.
 */
function answer(reply: FastifyReply, listing: PageQuery, page: PlantPage, next: string | null): Plant[] {
  if (next !== null) reply.header('link', nextLink(listing, next));
  if (page.json === undefined) return page.plants as Plant[];
  // The route's type knows only the schema's array; a string with a JSON content type goes out as is.
  reply.type('application/json; charset=utf-8');
  return page.json as unknown as Plant[];
}

/**
 * The plant routes. Typed by their TypeBox schemas (the type provider is types only: validation stays
 * with Fastify's ajv, its keywords and its messages), so handlers read body, query and params uncast.
 * `auth` is the app's one set of authentication steps (one token cache for all routes: see app.ts).
 */
export const plantRoutes: FastifyPluginAsyncTypebox<{ store: Store; auth: AuthSteps }> = async (app, { store, auth }) => {
  const cursors = new PageCursors(store);

  app.post(
    '/plants',
    {
      onRequest: [...auth.identify, requireScope('plants:write'), ...auth.throttle],
      schema: {
        summary: 'Create a plant',
        operationId: 'createPlant',
        tags: [TAG.plants],
        description:
          'Stores the plant for the calling user. Repeating a create with the same id and content is an idempotent retry (200, nothing duplicated); the same id with different content is 409.',
        security: SECURITY,
        body: ref<NewPlantBody>(NewPlantSchema),
        response: {
          200: ref(PlantSchema),
          ...errorResponses(...BODY_ERRORS, ERRORS.invalidNewPlant, ...AUTHENTICATION_ERRORS, ERRORS.idConflict),
        },
      },
    },
    async (request) => {
      const { body } = request;
      // Already the exact int64 its literal denotes (the EXACT_INT64 keyword, http/plugins/json.ts): 1e3 is
      // 1000, while 2.00000000000000001 was refused though its nearest double is an integer.
      const { id } = body;
      const plant = body.tag === undefined ? { id, name: body.name } : { id, name: body.name, tag: body.tag };
      if ((await store.plants.createPlant(request.principal.user, plant)) === 'conflict') {
        throw new ApiError(ERRORS.idConflict, `${ERRORS.idConflict.message}: ${id}`);
      }
      return plantOf(plant);
    },
  );

  app.get(
    '/plants',
    {
      onRequest: [...auth.identify, requireScope('plants:read'), ...auth.throttle],
      schema: {
        summary: 'List plants',
        operationId: 'listPlants',
        tags: [TAG.plants],
        description:
          'The caller\'s plants (an admin token: every user\'s), oldest first. When more remain, a `Link: <…>; rel="next"` header gives the URL of the next page.',
        security: SECURITY,
        querystring: ListQuery,
        response: {
          200: {
            description: 'A page of plants; `Link` rel="next" when more remain',
            headers: { Link: { type: 'string', description: 'RFC 8288 link to the next page' } },
            ...Type.Array(ref(PlantSchema)),
          },
          ...errorResponses(ERRORS.invalidQuery, ...AUTHENTICATION_ERRORS),
        },
      },
    },
    (request, reply) => {
      // ajv has filled in the default limit; the type cannot know it, so it is named once more here.
      const { limit = LIMIT_DEFAULT, tag, cursor } = request.query;
      const owner = request.principal.admin ? null : request.principal.user;
      // A page the list cache holds, whose next cursor was sealed before, is answered within this call:
      // no promise, no wait for another turn of the event loop (a cursor is opened at once once the key
      // has been read, by any request before). Anything else is read and sealed by `listFromStore`.
      const after = cursor === undefined ? undefined : cursors.openNow(cursor, { owner, tag });
      if (cursor !== undefined && after === undefined) return listFromStore(reply, { owner, tag, cursor, limit });
      const listing = { owner, tag, after, limit };
      const page = store.plants.cachedPage(listing);
      const next = page === undefined || page.next === null ? null : cursors.known(page, listing);
      if (page === undefined || next === undefined) return listFromStore(reply, listing, page);
      return answer(reply, listing, page, next);
    },
  );

  /**
   * The list, for what the route could not answer at once: the cursor opened (when `listing` still has
   * it), the page read (unless `cached`), its next cursor sealed.
   */
  async function listFromStore(
    reply: FastifyReply, listing: ListQuery | Unopened, cached?: PlantPage,
  ): Promise<Plant[]> {
    const { owner, tag, limit } = listing;
    const opened = 'cursor' in listing ? { owner, tag, after: await cursors.open(listing.cursor, { owner, tag }), limit } : listing;
    const page = cached ?? (await store.plants.listPlants(opened));
    return answer(reply, opened, page, page.next === null ? null : (cursors.known(page, opened) ?? (await cursors.seal(page, opened))));
  }

  app.delete(
    '/plants/:id',
    {
      onRequest: [...auth.identify, requireScope('plants:write'), ...auth.throttle],
      schema: {
        summary: 'Delete a plant',
        operationId: 'deletePlant',
        tags: [TAG.plants],
        description: 'Deletes the caller\'s plant with this id (an admin deletes only its own plants, too).',
        security: SECURITY,
        params: DeleteParams,
        response: {
          204: { description: 'Deleted', type: 'null' },
          ...errorResponses(ERRORS.invalidPath, ...AUTHENTICATION_ERRORS, ERRORS.plantNotFound, ...BODY_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      if (!(await store.plants.deletePlant(request.principal.user, id))) throw new ApiError(ERRORS.plantNotFound);
      return reply.code(204).send(null);
    },
  );
};
