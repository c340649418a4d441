import { randomBytes } from 'node:crypto';
import cors from '@fastify/cors';
import Fastify, {
  LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions,
} from 'fastify';
import fp from 'fastify-plugin';
import { DEFAULTS, type Config } from './config/load.js';
import type { Store } from './store/store.js';
import { clientAddress, trustedProxies } from './http/client-address.js';
import { limitConnections } from './http/plugins/connections.js';
import { ERRORS, type ErrorRow } from './http/errors.js';
import { toApiError } from './http/error-mapping.js';
import { apiDocs } from './http/routes/docs.js';
import { livenessRoute, readinessRoute } from './http/routes/health.js';
import { exactInt64Keyword, registerJsonParser } from './http/plugins/json.js';
import { notFoundOrNotAllowed } from './http/plugins/not-found.js';
import { openApi } from './http/openapi.js';
import { StoreOutage } from './http/plugins/outage.js';
import { plantRoutes } from './http/routes/plants/index.js';
import { tokenRoutes } from './http/routes/tokens/index.js';
import { webhookRoutes } from './http/routes/webhooks/index.js';
import { bearerAuth, verifiers } from './http/auth/index.js';
import { stillValid } from './http/auth/hooks.js';
import { FeedHub, type FeedObserver } from './feed/hub.js';
import { feedRoute } from './http/routes/plants/events.js';
import { clientErrorHandler, enforceProtocol, refusal } from './http/plugins/protocol.js';
import { refuseOversizedChunks } from './http/plugins/chunked-limit.js';
import { exactPathIds, strictQuery } from './http/plugins/query.js';
import { AuthFailureLimit, TokenRateLimit } from './http/auth/limits.js';
import { addSharedSchemas } from './http/schemas.js';
import { readinessGate } from './http/plugins/readiness.js';
import { LateStore } from './store/wrappers/late.js';
import { requestLogger } from './http/plugins/request-logger.js';
import { SECURITY_HEADERS, securityHeaders } from './http/plugins/security-headers.js';
import { drainOnClose } from './http/plugins/shutdown.js';
import { dedupingSerializers } from './http/serializers.js';

/** The settings the HTTP layer uses; every one has the default of the configuration table. */
export type HttpSettings = Pick<
  Config,
  | 'accessLog' | 'docs' | 'maxBodySize' | 'maxHeaderSize' | 'maxUrlLength' | 'maxJsonDepth' | 'maxConnections' | 'maxConnectionsPerAddress'
  | 'requestTimeoutMs' | 'trustProxy' | 'corsOrigins' | 'authFailureLimit' | 'rateLimit' | 'drainTimeoutMs'
  | 'webhookAllowPrivate' | 'webhookMaxPerUser' | 'webhookMaxQueuedPerUser'
  | 'feedRetentionMs' | 'feedHeartbeatMs' | 'feedMaxStreams' | 'feedMaxStreamsPerToken'
  | 'jwtIssuer' | 'jwtJwksUrl' | 'jwtAudience' | 'jwtAlgorithms' | 'jwtClockSkewMs' | 'jwtUserClaim' | 'jwtDefaultScopes'
>;

/** Fastify's builders of validators (Ajv) and serializers (fast-json-stringify). */
export type SchemaCompilers = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

/** What the Fastify instance itself is created with (server options: they cannot be set by a plugin). */
export interface ServerOptions extends Partial<HttpSettings> {
  readonly logger: FastifyBaseLogger;
  /**
   * Builders to use instead of the app's own, for apps that share them: a builder keeps what it built
   * (Ajv instances, each of which compiles the JSON Schema meta-schema; serializers), so apps given the
   * same ones build each of those once between them. Tests give one pair to every app of a file; a
   * server builds one app and needs none. Not a setting.
   */
  readonly schemaCompilers?: SchemaCompilers;
}

export interface PluginOptions extends Partial<HttpSettings> {
  /** A LateStore when the server listens before its store is open (see store/wrappers/late.ts). */
  readonly store: Store | LateStore;
  /** The unknown-kid refetch cooldown of JWT keys (default 30 s); tests shorten it. Not a setting. */
  readonly jwtCooldownMs?: number;
  /** How long one fetch of the JWT key set may take (http/auth/jwks.ts by default); tests shorten it. Not a setting. */
  readonly jwtFetchTimeoutMs?: number;
  /**
   * How often a failed store is pinged, and how long without a 503 before it counts as back (defaults in
   * http/plugins/outage.ts); tests shorten them to see an outage end. Not settings.
   */
  readonly outageProbeMs?: number;
  readonly outageQuietMs?: number;
  /**
   * Told of each endpoint DELETE /webhooks/{id} removed, once the store has removed it and before the
   * answer: server.ts passes its webhook worker's, which then drops the events of it that it holds, so
   * that no attempt starts after the answer. Per app: another app in the process is not told. Without
   * one, nothing is told (an app whose process delivers no webhooks of its own).
   */
  readonly onWebhookDeleted?: ((endpointId: string) => void) | undefined;
  /** The metrics' view of the live feed (streams, events sent); none without metrics. */
  readonly feedObserver?: FeedObserver | undefined;
}

export interface AppOptions extends ServerOptions, PluginOptions {}

const REQUEST_ID_PREFIX = randomBytes(6).toString('base64url');

/** The route's row for a body that fails its schema (its `config.invalidBody`), read only for such an error. */
function invalidBodyRow(error: unknown, request: FastifyRequest): ErrorRow | undefined {
  return (error as FastifyError | null)?.validationContext === 'body' ? request.routeOptions.config.invalidBody : undefined;
}

type ErrorSender = (error: unknown, request: FastifyRequest, reply: FastifyReply) => FastifyReply;

/** `outage` is absent for errors raised before routing, which are never a store's. */
function errorSender(outage: StoreOutage | undefined): ErrorSender {
  return function sendError(error, request, reply) {
    const { row, headers, message } = toApiError(error, invalidBodyRow(error, request));
    if (row.status < 500) return reply.code(row.status).headers(headers).send({ error: row.code, message });
    // A 503 is an expected condition, logged once per change of state rather than per request: a store
    // outage by StoreOutage (warn, no stack), start-up and drain by server.ts. A 500 is a bug: its stack.
    if (row === ERRORS.storeUnavailable) outage?.failed(error instanceof Error ? error : new Error(message), request.log);
    // The identity provider's state is logged by its key cache (http/auth/jwks.ts), once per change;
    // connection refusals by http/plugins/connections.ts, at most once a minute.
    else if (row !== ERRORS.notServing && row !== ERRORS.identityProviderUnavailable && row !== ERRORS.tooManyConnections) {
      request.log.error({ err: error }, 'request failed');
    }
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
    { method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 100) / 100, remote: clientAddress(request) },
    'request',
  );
  done();
}

/**
 * The Fastify instance with its server options (fastify/demo's server.ts part): what only the
 * constructor can set. Everything else is the `plantstore` plugin.
 */
export function createServer({ logger, schemaCompilers, ...overrides }: ServerOptions): FastifyInstance {
  const settings: HttpSettings = { ...DEFAULTS, ...overrides };
  // Per instance: two apps in one process (tests) count their own requests.
  let requestCount = 0;
  const sendFrameworkError = errorSender(undefined);
  const app = Fastify({
    loggerInstance: logger,
    // Fastify would log two lines per request (received, completed); with ACCESS_LOG=on, logAccess
    // writes one instead.
    logController: new LogController({ disableRequestLogging: true }),
    // request.log makes its pino child only when something is logged through it (http/plugins/request-logger.ts).
    childLoggerFactory: requestLogger,
    // Unique across instances and restarts (a random prefix per process), cheaper than a UUID each.
    genReqId: () => `${REQUEST_ID_PREFIX}-${(++requestCount).toString(36)}`,
    // Our own reading of TRUST_PROXY and of X-Forwarded-For entries (http/client-address.ts), not proxy-addr's.
    trustProxy: trustedProxies(settings.trustProxy) ?? false,
    // `/plants/` is `/plants` (and `/plants/7/` is `/plants/7`), as most HTTP frameworks and their users
    // have it. Without this, `/plants/` matched `/plants/:id` with an empty id: GET was 405 Allow: DELETE.
    routerOptions: { ignoreTrailingSlash: true },
    // Fastify's default request timeout is 0 (none), which lets a slow client hold a connection forever.
    requestTimeout: settings.requestTimeoutMs,
    http: {
      headersTimeout: settings.requestTimeoutMs,
      // Node checks these timeouts on this interval (default 30 s), so it bounds how late they fire.
      connectionsCheckingInterval: Math.min(1000, settings.requestTimeoutMs / 4),
      maxHeaderSize: settings.maxHeaderSize,
      // Node would answer a missing Host itself, with an empty body; http/plugins/protocol.ts answers it instead.
      requireHostHeader: false,
    },
    bodyLimit: settings.maxBodySize,
    clientErrorHandler,
    // During shutdown Fastify would answer requests on already-open connections with a 503 of its own
    // body shape. Serving them (with Connection: close) is what clients want; new connections are
    // refused because the listener is closed first.
    return503OnClosing: false,
    // Errors Fastify raises before routing (a URL with bad percent-encoding) get the same treatment. Such
    // a request has no route, so no hook runs (Fastify gives it a context without hooks): the security
    // headers are set here, and a framing error takes precedence as it would in the hook (http/plugins/protocol.ts).
    frameworkErrors: (error, request, reply) =>
      sendFrameworkError(refusal(request.raw) ?? error, request, reply.headers(SECURITY_HEADERS)),
    ajv: {
      customOptions: {
        // Fastify coerces types by default, which would accept {"name": 5} as "5" and {"id": "5"} as 5.
        // JSON bodies arrive typed; query strings are coerced strictly by http/plugins/query.ts.
        coerceTypes: false,
      },
      // A NewPlant's id is decided on its literal and handed on as a bigint (http/plugins/json.ts).
      plugins: [exactInt64Keyword],
    },
    // Fastify's serializer builder, with each distinct response schema built once per app (http/serializers.ts);
    // without a validator builder, Fastify makes its own.
    schemaController: { compilersFactory: { ...schemaCompilers, buildSerializer: schemaCompilers?.buildSerializer ?? dedupingSerializers() } },
  });
  // MAX_CONNECTIONS, MAX_CONNECTIONS_PER_ADDRESS, and idle connections closed early near the cap.
  const connections = limitConnections(app.server, settings, app.log);
  app.addHook('onClose', (_instance, done) => {
    connections.stop();
    done();
  });
  return app;
}

/**
 * The whole API as one plugin (fastify/demo's app.ts). fastify-plugin keeps it unencapsulated: its
 * error handler, not-found/405 handler and hooks belong to the instance it is registered on, so a
 * route or hook added there afterwards, by anyone, gets them too. 405 needs no "call me last" step: the
 * not-found handler asks the router which methods the path has (http/plugins/not-found.ts).
 */
export const plantstore = fp(
  async function plantstore(app: FastifyInstance, { store: given, jwtCooldownMs, jwtFetchTimeoutMs, onWebhookDeleted, outageProbeMs, outageQuietMs, feedObserver, ...overrides }: PluginOptions): Promise<void> {
    const settings: HttpSettings = { ...DEFAULTS, ...overrides };
    const late = given instanceof LateStore ? given : undefined;
    const store: Store = given instanceof LateStore ? given.handle : given;
    const outage = new StoreOutage(store, app.log, { probeMs: outageProbeMs, quietMs: outageQuietMs });
    const sendError = errorSender(outage);

    registerJsonParser(app, { maxDepth: settings.maxJsonDepth });
    app.setErrorHandler(sendError);
    const notFound = notFoundOrNotAllowed(app);
    // The hooks object names preParsing, which Fastify honours but does not declare (see not-found.ts).
    app.setNotFoundHandler(notFound.hooks as object, notFound.handler);
    // First of all hooks: framing, protocol and URL length checks, before anything reads the request.
    enforceProtocol(app, { maxUrlLength: settings.maxUrlLength });
    // A chunked body whose chunks announce more than MAX_BODY_SIZE is 413 before that much arrives.
    refuseOversizedChunks(app, { maxBodySize: settings.maxBodySize });
    securityHeaders(app);
    if (settings.accessLog) app.addHook('onResponse', logAccess);
    // The live feed. Its streams end as the drain starts (each told, to resume elsewhere): this hook comes
    // before the drain's, which waits for every answer under way to end.
    const hub = new FeedHub({ feed: store.feed, settings, log: app.log, observer: feedObserver });
    app.addHook('preClose', (done) => {
      hub.close();
      done();
    });
    const drain = drainOnClose(app, { drainTimeoutMs: settings.drainTimeoutMs });
    // The store is about to close: stop probing it.
    app.addHook('onClose', (_instance, done) => {
      outage.stop();
      done();
    });
    const cross = settings.corsOrigins.length > 0;
    if (cross) {
      await app.register(cors, {
        origin: [...settings.corsOrigins],
        // Every method a route of the API answers: a browser refuses a method the preflight leaves out, with
        // nothing for the page to read (PATCH /webhooks/{id} was). test/api/security.test.ts checks it against /openapi.json.
        methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'],
        allowedHeaders: ['Authorization', 'Content-Type', 'Last-Event-ID'],
        exposedHeaders: ['Link', 'Retry-After', 'RateLimit', 'RateLimit-Policy', 'WWW-Authenticate'],
        maxAge: 600,
      });
    }
    addSharedSchemas(app);
    strictQuery(app);
    exactPathIds(app);
    await openApi(app);
    // Outside the store's scope: the reference needs no store, and answers while it opens.
    if (settings.docs) await apiDocs(app);
    await app.register(livenessRoute);
    // Every route that uses the store, in one scope behind the readiness gate.
    await app.register(async function storeRoutes(scope) {
      if (late) readinessGate(scope, late);
      // One set of authentication steps for every route: one token cache, one failure count per address.
      // The JWT verifier (when configured) starts fetching its provider's keys now, in the background:
      // neither start-up nor /readyz waits for the provider.
      const list = verifiers(store, settings, app.log, { jwtCooldownMs, jwtFetchTimeoutMs });
      scope.addHook('onClose', (_instance, done) => {
        for (const v of list) v.close?.();
        done();
      });
      const auth = bearerAuth(scope, store, {
        failures: settings.authFailureLimit ? new AuthFailureLimit(store, settings.authFailureLimit) : undefined,
        tokenRate: settings.rateLimit ? new TokenRateLimit(store, settings.rateLimit) : undefined,
      }, list);
      await scope.register(plantRoutes, { store, auth });
      hub.checkTokensWith((bearer) => stillValid(list, bearer, 'plants:read'));
      await scope.register(feedRoute, { store, auth, hub });
      await scope.register(webhookRoutes, {
        store,
        auth,
        settings: { allowPrivate: settings.webhookAllowPrivate, maxPerUser: settings.webhookMaxPerUser },
        maxQueuedPerUser: settings.webhookMaxQueuedPerUser,
        onDeleted: onWebhookDeleted,
      });
      await scope.register(tokenRoutes, { store, auth });
      await scope.register(readinessRoute, { store, drain });
    });
  },
  { name: 'plantstore', fastify: '5.x' },
);

/** A Fastify instance with the plantstore plugin registered and loaded; more may be added to it. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const app = createServer(options);
  await app.register(plantstore, options);
  return app;
}
