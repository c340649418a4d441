import { randomBytes } from 'node:crypto';
import cors from '@fastify/cors';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { DEFAULTS, type Config } from './config.js';
import type { Store } from './store/store.js';
import { clientErrorHandler, ERRORS, toApiError } from './http/errors.js';
import { healthRoutes } from './http/health.js';
import { exactInt64Keyword, registerJsonParser } from './http/json.js';
import { manageLifecycle } from './http/lifecycle.js';
import { notFoundOrNotAllowed } from './http/methods.js';
import { openApi } from './http/openapi.js';
import { StoreOutage } from './http/outage.js';
import { plantRoutes } from './http/plants.js';
import { enforceProtocol, framingError } from './http/protocol.js';
import { strictQuery } from './http/query.js';
import { AuthFailureLimit, TokenRateLimit } from './http/rate-limit.js';
import { addSharedSchemas } from './http/schemas.js';
import { SECURITY_HEADERS } from './http/security-headers.js';

/** The settings the HTTP layer uses; every one has the default of the configuration table. */
export type HttpSettings = Pick<
  Config,
  | 'accessLog' | 'maxBodySize' | 'maxHeaderSize' | 'maxUrlLength' | 'maxJsonDepth' | 'maxConnections'
  | 'requestTimeoutMs' | 'trustProxy' | 'corsOrigins' | 'authFailureLimit' | 'rateLimit'
>;

export interface AppOptions extends Partial<HttpSettings> {
  readonly store: Store;
  readonly logger: FastifyBaseLogger;
}

const REQUEST_ID_PREFIX = randomBytes(6).toString('base64url');
let requestCount = 0;

type ErrorSender = (error: unknown, request: FastifyRequest, reply: FastifyReply) => FastifyReply;

function errorSender(outage: StoreOutage): ErrorSender {
  return function sendError(error, request, reply) {
    const { row, headers, message } = toApiError(error);
    if (row.status < 500) return reply.code(row.status).headers(headers).send({ error: row.code, message });
    // A 503 is an expected condition, logged once per change of state rather than per request: a store
    // outage by StoreOutage (warn, no stack), start-up and drain by server.ts. A 500 is a bug: its stack.
    if (row === ERRORS.storeUnavailable) outage.failed(error instanceof Error ? error : new Error(message), request.log);
    else if (row !== ERRORS.notServing) request.log.error({ err: error }, 'request failed');
    // A 5xx shows no internal text; the request id ties the answer to the logged cause.
    return reply.code(row.status).headers(headers).send({ error: row.code, message: `${message} (request id ${request.id})` });
  };
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

export async function buildApp({ store, logger, ...overrides }: AppOptions): Promise<FastifyInstance> {
  const settings: HttpSettings = { ...DEFAULTS, ...overrides };
  const outage = new StoreOutage(store, logger);
  const sendError = errorSender(outage);
  const app = Fastify({
    loggerInstance: logger,
    // Fastify would log two lines per request (received, completed); with ACCESS_LOG=on, logAccess
    // writes one instead.
    logController: new LogController({ disableRequestLogging: true }),
    // Unique across instances and restarts (a random prefix per process), cheaper than a UUID each.
    genReqId: () => `${REQUEST_ID_PREFIX}-${(++requestCount).toString(36)}`,
    trustProxy: settings.trustProxy,
    // Fastify's default request timeout is 0 (none), which lets a slow client hold a connection forever.
    requestTimeout: settings.requestTimeoutMs,
    http: {
      headersTimeout: settings.requestTimeoutMs,
      // Node checks these timeouts on this interval (default 30 s), so it bounds how late they fire.
      connectionsCheckingInterval: Math.min(1000, settings.requestTimeoutMs / 4),
      maxHeaderSize: settings.maxHeaderSize,
      // Node would answer a missing Host itself, with an empty body; http/protocol.ts answers it instead.
      requireHostHeader: false,
    },
    bodyLimit: settings.maxBodySize,
    clientErrorHandler,
    // During shutdown Fastify would answer requests on already-open connections with a 503 of its own
    // body shape. Serving them (with Connection: close) is what clients want; new connections are
    // refused because the listener is closed first.
    return503OnClosing: false,
    // Errors Fastify raises before routing (a URL with bad percent-encoding) get the same treatment. Such
    // a request has no route, so no hook runs: the security headers are set here, and a framing error
    // takes precedence as it would in the hook (http/protocol.ts).
    frameworkErrors: (error, request, reply) =>
      sendError(framingError(request.raw) ?? error, request, reply.headers(SECURITY_HEADERS)),
    ajv: {
      customOptions: {
        // Fastify coerces types by default, which would accept {"name": 5} as "5" and {"id": "5"} as 5.
        // JSON bodies arrive typed; query strings are coerced strictly by http/query.ts.
        coerceTypes: false,
      },
      // A NewPlant's id is decided on its literal and handed on as a bigint (http/json.ts).
      plugins: [exactInt64Keyword],
    },
  });
  // Connections beyond this are closed by Node as soon as they are accepted.
  app.server.maxConnections = settings.maxConnections;

  registerJsonParser(app, { maxDepth: settings.maxJsonDepth });
  app.setErrorHandler(sendError);
  app.setNotFoundHandler(notFoundOrNotAllowed(app));
  // First of all hooks: framing, protocol and URL length checks, before anything reads the request.
  enforceProtocol(app, { maxUrlLength: settings.maxUrlLength });
  if (settings.accessLog) app.addHook('onResponse', logAccess);
  const lifecycle = manageLifecycle(app, outage);
  const cross = settings.corsOrigins.length > 0;
  if (cross) {
    await app.register(cors, {
      origin: [...settings.corsOrigins],
      methods: ['GET', 'POST', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type'],
      exposedHeaders: ['Link', 'Retry-After', 'RateLimit', 'RateLimit-Policy', 'WWW-Authenticate'],
      maxAge: 600,
    });
  }
  addSharedSchemas(app);
  strictQuery(app);
  await openApi(app);
  await app.register(plantRoutes, {
    store,
    limits: {
      failures: settings.authFailureLimit ? new AuthFailureLimit(store, settings.authFailureLimit) : undefined,
      tokenRate: settings.rateLimit ? new TokenRateLimit(store, settings.rateLimit) : undefined,
    },
  });
  await app.register(healthRoutes, { store, lifecycle });
  return app;
}
