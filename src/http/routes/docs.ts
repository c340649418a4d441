import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

export const DOCS_PREFIX = '/docs';

/**
 * The policy of the one document /docs serves, and of nothing else: its scripts and styles are files
 * of this server (no inline code, no eval), its images are those files or data: URLs (Swagger UI's CSS
 * draws its icons as data: SVGs), and it may fetch only this server (the document and the "try it"
 * requests). No fonts, frames, objects, forms, workers or base URL of its own; never framed.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The HTML page: GET /docs and /docs/ (Fastify routes both). */
const PAGE_ROUTES = new Set([DOCS_PREFIX, `${DOCS_PREFIX}/`]);

/**
 * Swagger UI's files, served by @fastify/static with an ETag and Last-Modified (size and file time).
 * They are the same for everyone and change only when the package is installed again (which sets new
 * file times), so they may be kept, but are revalidated on every use (`no-cache`): a second visit
 * costs a 304 instead of 2.1 MB, and an upgrade is seen at once.
 */
const STATIC_FILES = `${DOCS_PREFIX}/static/*`;

/**
 * GET /docs: Swagger UI over this server's OpenAPI document, every file served from the installed
 * package (no CDN). Its routes are hidden from /openapi.json and need no store, so they answer while
 * the store opens, like /openapi.json. The app's strict headers (security-headers.ts) apply to every
 * answer here too; only the page itself gets DOCS_CSP, by this scope's onSend hook, which runs after
 * the app's. Errors (a 404 under /docs/static/) keep the strict policy.
 */
export async function apiDocs(app: FastifyInstance): Promise<void> {
  await app.register(async function docs(scope) {
    scope.addHook('onSend', (request, reply, payload, done) => {
      const route = request.routeOptions.url ?? '';
      if (reply.statusCode === 200 && PAGE_ROUTES.has(route)) reply.header('content-security-policy', DOCS_CSP);
      if ((reply.statusCode === 200 || reply.statusCode === 304) && route === STATIC_FILES) reply.header('cache-control', 'no-cache');
      done(null, payload);
    });
    await scope.register(swaggerUi, {
      routePrefix: DOCS_PREFIX,
      theme: { title: 'Plant Store API reference' },
      uiConfig: {
        // BaseLayout: no top bar, whose box would load a document from any URL.
        layout: 'BaseLayout',
        // Swagger UI would send the document to validator.swagger.io for its badge.
        validatorUrl: null,
        // The token pasted in Authorize stays for this tab only, not on disk (the default too; said here).
        persistAuthorization: false,
        tryItOutEnabled: false,
        displayRequestDuration: true,
      },
    });
  });
}
