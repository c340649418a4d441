import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import type { FastifyInstance, preParsingHookHandler } from 'fastify';
import { ApiError, ERRORS } from '../errors.js';
import { ChunkedFraming } from './chunked-framing.js';
import { onlyChunked } from './protocol.js';

/** What is known of a chunked body's announced size, kept on its request. */
interface Watch {
  state: 'reading' | 'oversize' | 'done';
  /** Set once Fastify reads the body: fails that read, so the answer is the error handler's. */
  refuse: (() => void) | undefined;
}

const WATCH = Symbol('chunkedBodyWatch');
type Watched = IncomingMessage & { [WATCH]?: Watch };

/**
 * The server socket's HTTP parser. `getCurrentBuffer` is internal to Node (it gives the `rawPacket` of a
 * clientError): a copy of the bytes of the read being parsed. Optional here, so that a Node without it
 * keeps the earlier behaviour (413 once more than the limit has arrived) rather than failing.
 */
type ParsedSocket = Socket & { parser?: { getCurrentBuffer?: unknown } | null };

/** Methods whose body Fastify never reads: what their chunks announce is not this server's concern. */
const BODYLESS = new Set(['GET', 'HEAD', 'TRACE']);

const CLOSE = { connection: 'close' };
/** Connection: close, or Node would go on reading the announced bytes to find the next request. */
const tooLarge = (): ApiError =>
  new ApiError(ERRORS.bodyTooLarge, `${ERRORS.bodyTooLarge.message}: the chunks of the body announce more`, CLOSE);

/**
 * 413 as soon as the chunk sizes of a chunked body announce more than MAX_BODY_SIZE, rather than once
 * that much has arrived. Node's parser reads a chunk-size line without telling JavaScript, so a client
 * could announce a huge chunk, send nothing more, and hold the connection until the request timeout.
 *
 * Node emits 'request' during the parse of the read that completed the head, where the parser still
 * holds that read's bytes; the body's framing starts after the head, and is read on from there. If
 * the body goes on past that read, a 'data' listener on the socket sees the reads that follow (Node
 * then parses them in JavaScript, as it does once anyone listens to a server socket) until the body's
 * framing ends. Requests without Transfer-Encoding pay one header check, and on routes that read a
 * body, one preParsing hook that finds nothing to do.
 */
export function refuseOversizedChunks(app: FastifyInstance, { maxBodySize }: { maxBodySize: number }): void {
  // Before Fastify's own listener: its hooks may reach preParsing in this same call.
  app.server.prependListener('request', (request: IncomingMessage) => {
    if (request.headers['transfer-encoding'] !== undefined && onlyChunked(request)) watchBody(request, maxBodySize);
  });
  const refuseWhenAnnounced: preParsingHookHandler = (request, _reply, payload, done) => {
    const watch = (request.raw as Watched)[WATCH];
    // A route may take GET and POST alike.
    if (watch === undefined || watch.state === 'done' || BODYLESS.has(request.method)) return done(null, payload);
    // Announced while earlier hooks ran (authentication).
    if (watch.state === 'oversize') return done(tooLarge());
    const guarded = new PassThrough();
    // Fastify listens for errors while it reads the body; one may come after its own 413 stopped the read.
    guarded.on('error', () => {});
    payload.pipe(guarded);
    watch.refuse = () => guarded.destroy(tooLarge());
    done(null, guarded);
  };
  // Only on routes of a method Fastify reads a body for, so that others (GET /plants) pay nothing more.
  // A request no route takes is answered 404 or 405 whatever its body (http/plugins/not-found.ts): the
  // not-found route is not one of these.
  app.addHook('onRoute', (route) => {
    if ([route.method].flat().every((method) => BODYLESS.has(method))) return;
    route.preParsing = [refuseWhenAnnounced, ...[route.preParsing ?? []].flat()];
  });
}

function watchBody(request: IncomingMessage, limit: number): void {
  const socket = request.socket as ParsedSocket;
  const bodyStart = bodyStartInRead(request, socket);
  if (bodyStart === undefined) return;
  const { bytes, start } = bodyStart;
  const framing = new ChunkedFraming(limit);
  const watch: Watch = { state: 'reading', refuse: undefined };
  (request as Watched)[WATCH] = watch;
  const settled = (progress: ReturnType<ChunkedFraming['read']>): boolean => {
    if (progress === 'more') return false;
    if (progress !== 'oversize') watch.state = 'done';
    else {
      watch.state = 'oversize';
      watch.refuse?.();
    }
    return true;
  };
  if (settled(framing.read(bytes, start))) return;
  // Node's listener parsed these bytes first (this one was added later): a faulty chunk was answered by
  // the clientError handler already, and the framing ends on the same byte for both.
  const onData = (data: Buffer): void => {
    if (settled(framing.read(data))) socket.removeListener('data', onData);
  };
  socket.on('data', onData);
}

const CRLF = 0x0a0d; // read little-endian: CR then LF
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');

/**
 * The read being parsed and where this request's body starts in it, when that is certain; else
 * undefined (the request keeps the earlier behaviour).
 *
 * The read must begin with this request's request line (after the empty lines RFC 9112 §2.2 lets a
 * server skip), and that line must not occur again in it. Otherwise the read may begin with an earlier
 * request's bytes: a pipelined request, or the rest of an earlier body, which could hold any text
 * (this request's own line then comes later in the read). The first blank line after it ends the head
 * (a head holds none), provided every line of the head ends in CRLF: with a bare LF, Node's parser
 * might end it elsewhere.
 */
function bodyStartInRead(request: IncomingMessage, socket: ParsedSocket): { bytes: Buffer; start: number } | undefined {
  const parser = socket.parser;
  if (parser == null || typeof parser.getCurrentBuffer !== 'function') return undefined;
  const bytes = (parser.getCurrentBuffer as () => unknown).call(parser);
  if (!Buffer.isBuffer(bytes)) return undefined;
  let lineStart = 0;
  while (lineStart + 1 < bytes.length && bytes.readUInt16LE(lineStart) === CRLF) lineStart += 2;
  const line = Buffer.from(`${request.method} ${request.url} HTTP/${request.httpVersion}\r\n`, 'latin1');
  if (!line.equals(bytes.subarray(lineStart, lineStart + line.length)) || bytes.indexOf(line, lineStart + 1) !== -1) return undefined;
  const headEnd = bytes.indexOf(HEAD_END, lineStart);
  if (headEnd < 0) return undefined;
  for (let lf = bytes.indexOf(0x0a, lineStart); lf >= 0 && lf < headEnd; lf = bytes.indexOf(0x0a, lf + 1)) {
    if (bytes[lf - 1] !== 0x0d) return undefined;
  }
  return { bytes, start: headEnd + HEAD_END.length };
}
