import { randomBytes } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Store } from './store/store.js';
import { drainConnectionsOnClose } from './http/drain.js';
import { ApiError, clientErrorHandler, ERRORS, toApiError } from './http/errors.js';
import { BODY_LIMIT_BYTES, registerJsonParser } from './http/json.js';
import { trackAllowedMethods } from './http/methods.js';
import { openApi } from './http/openapi.js';
import { healthRoutes } from './http/health.js';
import { plantRoutes } from './http/plants.js';
import { strictQueryIntegers } from './http/query.js';
import { addSharedSchemas } from './http/schemas.js';

export interface AppOptions {
  readonly store: Store;
  readonly logger: FastifyBaseLogger;
  /** A request must arrive whole within this time, or it is answered 408 and the connection closed. */
  readonly requestTimeoutMs?: number;
  /** One log line per request (see logAccess). Off by default: it costs about 5 µs of CPU per request. */
  readonly accessLog?: boolean;
}

export const REQUEST_TIMEOUT_MS = 30_000;

const REQUEST_ID_PREFIX = randomBytes(6).toString('base64url');
let requestCount = 0;

function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { row, headers, message } = toApiError(error);
  if (row.status < 500) return reply.code(row.status).headers(headers).send({ error: row.code, message });
  // A 5xx shows no internal text; the request id ties the answer to the logged cause.
  request.log.error({ err: error }, 'request failed');
  return reply.code(row.status).headers(headers).send({ error: row.code, message: `${message} (request id ${request.id})` });
}

/**
 * One line per request, after the response: what was asked, how it ended, how long it took. Only these
 * fields are logged, never headers (the token) or bodies.
 */
function logAccess(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  request.log.info(
    { method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 100) / 100, remote: request.ip },
    'request',
  );
  done();
}

export async function buildApp({ store, logger, requestTimeoutMs = REQUEST_TIMEOUT_MS, accessLog = false }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: logger,
    // Fastify would log two lines per request (received, completed); with ACCESS_LOG=on, logAccess
    // writes one instead.
    logController: new LogController({ disableRequestLogging: true }),
    // Unique across instances and restarts (a random prefix per process), cheaper than a UUID each.
    genReqId: () => `${REQUEST_ID_PREFIX}-${(++requestCount).toString(36)}`,
    // Fastify's default request timeout is 0 (none), which lets a slow client hold a connection forever.
    requestTimeout: requestTimeoutMs,
    http: {
      headersTimeout: requestTimeoutMs,
      // Node checks these timeouts on this interval (default 30 s), so it bounds how late they fire.
      connectionsCheckingInterval: Math.min(1000, requestTimeoutMs / 4),
    },
    bodyLimit: BODY_LIMIT_BYTES,
    clientErrorHandler,
    // During shutdown Fastify would answer requests on already-open connections with a 503 of its own
    // body shape. Serving them (with Connection: close) is what clients want; new connections are
    // refused because the listener is closed first.
    return503OnClosing: false,
    // Errors Fastify raises before routing (a URL with bad percent-encoding) get the same treatment.
    frameworkErrors: sendError,
    ajv: {
      customOptions: {
        // Fastify coerces types by default, which would accept {"name": 5} as "5" and {"id": "5"} as 5.
        // JSON bodies arrive typed; query strings are coerced strictly by http/query.ts.
        coerceTypes: false,
      },
    },
  });

  registerJsonParser(app);
  app.setErrorHandler(sendError);
  app.setNotFoundHandler(() => {
    throw new ApiError(ERRORS.routeNotFound);
  });

  if (accessLog) app.addHook('onResponse', logAccess);
  drainConnectionsOnClose(app);
  addSharedSchemas(app);
  strictQueryIntegers(app);
  const addMethodNotAllowedRoutes = trackAllowedMethods(app);
  await openApi(app);
  await app.register(plantRoutes, { store });
  await app.register(healthRoutes, { store });
  await app.after();
  addMethodNotAllowedRoutes();
  return app;
}
