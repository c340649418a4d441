import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { compareFeed, FEED_ID_PATTERN, parseFeedId, type FeedPosition } from '../../../domain/feed.js';
import { NO_TOKEN_ID } from '../../../domain/principal.js';
import { FeedStream } from '../../../feed/stream.js';
import type { FeedHub } from '../../../feed/hub.js';
import type { Store } from '../../../store/store.js';
import { requireScope, type AuthSteps } from '../../auth/index.js';
import { bearerOf } from '../../auth/hooks.js';
import { ApiError, ERRORS, RETRY_AFTER } from '../../errors.js';
import { SECURITY_HEADERS } from '../../plugins/security-headers.js';
import { AUTHENTICATION_ERRORS, errorResponses, HEADER_PARAMETERS, SECURITY, TAG } from '../../schemas.js';

const ID_TEXT = `An event id (the \`id\` of an event received, as it is: \`${FEED_ID_PATTERN}\`)`;

const EventsQuery = Type.Object({
  since: Type.Optional(Type.String({ maxLength: 41, description: `${ID_TEXT}: the stream continues after it. Last-Event-ID wins when both are given` })),
});

/** Checked by hand (resumeFrom), described for the document (see HEADER_PARAMETERS). */
const LAST_EVENT_ID = {
  name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', maxLength: 41 },
  description: `${ID_TEXT}, as EventSource and the client send it when they reconnect: the stream continues after it`,
};

const STREAM_DESCRIPTION = [
  'A `text/event-stream` (server-sent events). First `retry: 2000` and an event `ready` whose `id` is the position the stream',
  'continues after (the `since` given, or the log\'s end now). Then, in commit order, an event `plant.created` or `plant.deleted`',
  'for each plant of the caller (every user\'s for an admin token), `data` the plant as the webhook carries it (its id with every',
  'digit), `id` its position. A comment `: heartbeat` every FEED_HEARTBEAT. An event `end` (`data`: `{"reason", "message"}`,',
  'reason `slow-reader`, `shutting-down` or `token-revoked`) comes last when the server ends the stream. See docs/feed.md.',
].join(' ');

/** The position a request resumes from: Last-Event-ID, else `since`, else none (the log's end). */
function resumeFrom(header: string | string[] | undefined, since: string | undefined): FeedPosition | undefined {
  // Sent twice, it is ambiguous: refused, as a malformed one is.
  const text = Array.isArray(header) ? '' : header ?? since;
  if (text === undefined) return undefined;
  const at = parseFeedId(text.trim());
  if (at === undefined) throw new ApiError(ERRORS.invalidEventId);
  return at;
}

function refuseOverLimit(hub: FeedHub, key: string): void {
  const refused = hub.refusal(key);
  if (refused === 'instance-limit') throw new ApiError(ERRORS.feedFull, ERRORS.feedFull.message, RETRY_AFTER);
  if (refused === 'token-limit') throw new ApiError(ERRORS.tooManyStreams);
}

/** The live feed's route (src/feed/). */
export const feedRoute: FastifyPluginAsyncTypebox<{ store: Store; auth: AuthSteps; hub: FeedHub }> = async (app, { store, auth, hub }) => {
  app.get(
    '/plants/events',
    {
      onRequest: [...auth.identify, requireScope('plants:read'), ...auth.throttle],
      // A since the schema refuses (too long, given twice) is no event id either: the handler answers it
      // 40009, as it does the same text in Last-Event-ID, rather than the listing's 40003.
      attachValidation: true,
      schema: {
        summary: 'Follow plants created and deleted, live',
        operationId: 'watchPlants',
        tags: [TAG.plants],
        description:
          'Server-sent events of the caller\'s plants (an admin token: every user\'s) created and deleted, in commit order, across instances. ' +
          'A client that reconnects with Last-Event-ID (or `since`) receives every event after that one, none twice, while the feed keeps it ' +
          '(FEED_RETENTION). Browsers: read it with fetch (EventSource cannot send the Authorization header).',
        security: SECURITY,
        querystring: EventsQuery,
        [HEADER_PARAMETERS]: [LAST_EVENT_ID],
        response: {
          200: { description: STREAM_DESCRIPTION, content: { 'text/event-stream': { schema: { type: 'string' } } } },
          ...errorResponses(ERRORS.invalidEventId, ...AUTHENTICATION_ERRORS, ERRORS.feedExpired, ERRORS.tooManyStreams, ERRORS.feedFull),
        },
      },
    },
    async (request, reply) => {
      if (request.validationError) throw new ApiError(ERRORS.invalidEventId);
      const start = resumeFrom(request.headers['last-event-id'], request.query.since);
      const { principal } = request;
      const key = principal.tokenId === NO_TOKEN_ID ? `user:${principal.user}` : `token:${principal.tokenId}`;
      refuseOverLimit(hub, key);
      const bounds = await store.feed.feedBounds();
      if (start !== undefined && (compareFeed(start, bounds.pruned) < 0 || compareFeed(start, bounds.head) > 0)) {
        throw new ApiError(ERRORS.feedExpired);
      }
      // Checked again after the wait: streams may have opened meanwhile.
      refuseOverLimit(hub, key);
      const bearer = bearerOf(request.headers.authorization) ?? '';
      const stream = new FeedStream(reply.raw, { owner: principal.admin ? null : principal.user, bearer, key }, start ?? bounds.head, hub.ended);
      // The stream is written by hand from here: Fastify's hooks that set headers on an answer (security
      // headers, CORS) have set theirs on the reply, which are taken over.
      reply.hijack();
      stream.open({
        ...(reply.getHeaders() as OutgoingHttpHeaders),
        ...SECURITY_HEADERS,
        'content-type': 'text/event-stream; charset=utf-8',
        // Proxies that buffer answers (nginx) pass this one on as it comes.
        'x-accel-buffering': 'no',
      });
      hub.add(stream);
    },
  );
};
