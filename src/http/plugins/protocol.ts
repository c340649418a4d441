import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { ApiError, ERRORS, type ErrorRow } from '../errors.js';
import { SECURITY_HEADERS } from './security-headers.js';

/** Marks a request whose Expect header Node found unmeetable (see below). */
const EXPECTATION_FAILED = Symbol('expectationFailed');
type Marked = IncomingMessage & { [EXPECTATION_FAILED]?: true };
/**
 * Marks a refused connection with its refusal: every request read from it is answered with that error,
 * and Connection: close. Set when its framing was refused (nothing more read from it is a request), or
 * when it was refused as it opened (plugins/connections.ts).
 */
const REFUSED = Symbol('refused');
type MarkedSocket = Socket & { [REFUSED]?: ApiError };

const CLOSE = { connection: 'close' };

/**
 * HTTP/1.1 rules Node would otherwise enforce with answers of its own, empty or none at all. Each answer
 * here is an Error body with the security headers, like every other. Needs the http server option
 * `requireHostHeader: false` (see app.ts), so that a missing Host reaches the hook.
 *
 * Registers the first onRequest hook of the app, which also checks the URL's length (one hook rather than
 * two on every request): it runs before any route's own hooks (authentication) and before the body is read.
 */
export function enforceProtocol(app: FastifyInstance, { maxUrlLength }: { maxUrlLength: number }): void {
  // RFC 9110 §10.1.1: an expectation other than 100-continue may be refused with 417. Node would answer
  // 417 with an empty body; the request goes through Fastify instead, marked, and the hook refuses it,
  // so the answer has every header an answer gets (security, CORS, Connection: close while draining).
  app.server.on('checkExpectation', (request: Marked, response) => {
    request[EXPECTATION_FAILED] = true;
    app.routing(request, response);
  });
  // This server is no proxy. Node would close the connection without a word; what follows a CONNECT is
  // tunnel data, so the connection is closed after the answer.
  app.server.on('connect', (_request, socket) => {
    writeRawError(socket, ERRORS.badRequest, `${ERRORS.badRequest.message}: CONNECT is not supported (this is not a proxy)`);
  });
  app.addHook('onRequest', (request, _reply, done) => {
    const raw = request.raw as Marked;
    const refused = refusal(raw);
    if (refused !== undefined) return done(refused);
    if (request.url.length > maxUrlLength) return done(new ApiError(ERRORS.urlTooLong));
    // RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host.
    if (raw.headers.host === undefined && raw.httpVersion === '1.1') {
      return done(new ApiError(ERRORS.badRequest, `${ERRORS.badRequest.message}: an HTTP/1.1 request needs a Host header`));
    }
    if (raw[EXPECTATION_FAILED]) return done(new ApiError(ERRORS.expectationFailed));
    // Node keeps the first of two Host or Authorization lines and drops the other, so which host or
    // credentials count would depend on their order, and an intermediary may well pick the other one.
    // RFC 9112 §3.2: a request with more than one Host line MUST be answered 400; RFC 9110 §5.3: a field
    // that is not a list must not be repeated.
    const twice = repeatedField(raw.rawHeaders);
    if (twice !== undefined) {
      return done(new ApiError(ERRORS.badRequest, `${ERRORS.badRequest.message}: the ${twice} header appears more than once`));
    }
    done();
  });
}

/** The first of Host and Authorization that the request has more than one field line of, if any. */
function repeatedField(rawHeaders: readonly string[]): 'Host' | 'Authorization' | undefined {
  let host = false;
  let authorization = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const field = rawHeaders[i] as string;
    // Lengths first: most fields are neither, and are passed over without being lower-cased.
    if (field.length === 4 && field.toLowerCase() === 'host') {
      if (host) return 'Host';
      host = true;
    } else if (field.length === 13 && field.toLowerCase() === 'authorization') {
      if (authorization) return 'Authorization';
      authorization = true;
    }
  }
  return undefined;
}

/**
 * A connection refused before its first request was read (plugins/connections.ts): each request read
 * from it is answered with `error`, which should say Connection: close, so that the answer is to a
 * request the client sent, never one it has yet to send.
 */
export function refuseConnection(socket: Socket, error: ApiError): void {
  (socket as MarkedSocket)[REFUSED] = error;
}

/**
 * The refusal of a request: its connection's (refuseConnection), or that of a request whose body framing
 * this server does not read. Also used for requests Fastify refuses before routing (a bad URL), which no
 * hook sees. The answer closes the connection. Node goes on parsing what arrived with the request (with
 * `gzip, chunked` it can frame a request after the body) and would run it, its answer discarded: the
 * connection is marked, and anything read from it afterwards is refused too, so nothing after the
 * refusal runs. One property read per request, whatever the outcome.
 */
export function refusal(request: IncomingMessage): ApiError | undefined {
  const socket = request.socket as MarkedSocket;
  const refused = socket[REFUSED];
  if (refused !== undefined) return refused;
  if (request.headers['transfer-encoding'] === undefined || onlyChunked(request)) return undefined;
  return (socket[REFUSED] = new ApiError(
    ERRORS.badRequest,
    `${ERRORS.badRequest.message}: Transfer-Encoding must be exactly "chunked" (on HTTP/1.1, without Content-Length)`,
    CLOSE,
  ));
}

/**
 * The one transfer coding this server reads is chunked, alone. RFC 9112 §6.1: a coding the server does
 * not implement (`gzip, chunked`) SHOULD be 501, but a 5xx would blame the server for a request it
 * cannot take, so it is 400 like the other framing errors; chunked twice is forbidden; `identity` is no
 * coding any more; on HTTP/1.0 any Transfer-Encoding means faulty framing; with Content-Length as well
 * it is a smuggling attempt (RFC 9112 §6.3), refused rather than guessed at.
 */
export function onlyChunked(request: IncomingMessage): boolean {
  return (
    request.headers['transfer-encoding']?.toLowerCase() === 'chunked' &&
    request.httpVersion === '1.1' &&
    request.headers['content-length'] === undefined
  );
}

/**
 * The same security headers as every other answer. No hook can add them here: these answers are written
 * on the socket by hand, since no ServerResponse (and so no Fastify reply) exists for them.
 */
const RAW_HEADERS = Object.entries(SECURITY_HEADERS).map(([name, value]) => `${name}: ${value}\r\n`).join('');

/**
 * Writes an Error answer straight onto a socket that no ServerResponse owns (a parser error, a CONNECT),
 * with the security headers every answer carries, and closes the connection: what follows on it cannot
 * be read as a request.
 */
export function writeRawError(socket: Duplex, row: ErrorRow, message: string = row.message): void {
  const body = JSON.stringify({ error: row.code, message });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${row.status} ${STATUS_CODES[row.status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n${RAW_HEADERS}` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * Errors Node's HTTP parser raises before any route runs (a garbled request line, oversized headers, a
 * request that never finished arriving). Fastify's default answer has a different body shape; this one
 * keeps the contract: every failure carries an Error body.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // The parser may fail in a request's body after that request was answered (a route that answers
  // before reading the body, then a bad chunk): a second answer would be taken for the answer to the
  // next request. Node's own handler checks the same private field; the answer is flushed, then closed.
  if ((socket as Socket & { _httpMessage?: { headersSent: boolean } | null })._httpMessage?.headersSent) {
    socket.end(() => socket.destroy());
    return;
  }
  // A request answered in full before its body came (a refusal before the body is read), whose body then
  // stalls: Node is discarding the rest of that body (it marks the request `_dumped`), and the request
  // timeout fires on it. A 408 now would be a second answer to one request, which the client would take
  // for the answer to its next one. Everything was said already: close.
  if ((socket as Socket & { parser?: { incoming?: { _dumped?: boolean } | null } | null }).parser?.incoming?._dumped) {
    socket.end(() => socket.destroy());
    return;
  }
  const row =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? ERRORS.requestTimeout
    : error.code === 'HPE_HEADER_OVERFLOW' ? ERRORS.headersTooLarge
    : ERRORS.badRequest;
  writeRawError(socket, row);
}
