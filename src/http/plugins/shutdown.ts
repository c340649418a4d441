import { Server as NetServer, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/** How often the drain looks for connections that have gone quiet. */
const SWEEP_INTERVAL_MS = 100;
/**
 * While draining, a connection with no request in progress is closed by the server only once nothing has
 * arrived on it for this long. A client that received its last answer before the drain began (without
 * `Connection: close`) may already be sending its next request on that connection; closing it then
 * would reset that request. One second covers a network round trip (under 300 ms between continents)
 * plus a client whose event loop is briefly busy or paused by its garbage collector. It is also what an
 * idle pooled connection adds to a drain: one second, well inside DRAIN_TIMEOUT (10 s by default).
 * (A request sent at the very instant its idle connection is closed is the race every HTTP/1.1 server
 * has; RFC 9112 §9.3.1 lets clients retry it. This only makes it as unlikely as it can be.)
 */
const DRAIN_IDLE_MS = 1000;

export interface Drain {
  /** True from the start of the drain (app.close()) on: readiness answers 503, answers say Connection: close. */
  readonly closing: boolean;
}

export interface Watched {
  bytesRead: number;
  quietSince: number;
}

/**
 * Closes the connections of `open` that have had no request in progress, and nothing arriving, for
 * `idleMs`: what each was last seen with is kept in `watched` from one call to the next. Used by the drain
 * and, near MAX_CONNECTIONS, by plugins/connections.ts. A connection on which bytes arrived, or whose answer is
 * being written, starts its quiet time over. With `pick`, only the quiet connections it agrees to are
 * closed. Returns how many are to be closed (right after the event loop has read pending input).
 */
export function closeQuiet(open: Iterable<Socket>, watched: Map<Socket, Watched>, idleMs: number, pick?: (socket: Socket) => boolean): number {
  const now = Date.now();
  const quiet: Socket[] = [];
  for (const socket of open) {
    const seen = watched.get(socket);
    if (!seen || seen.bytesRead !== socket.bytesRead || answering(socket)) {
      watched.set(socket, { bytesRead: socket.bytesRead, quietSince: now });
    } else if (now - seen.quietSince >= idleMs && (pick === undefined || pick(socket))) {
      quiet.push(socket);
    }
  }
  if (quiet.length === 0) return 0;
  // Timers run before the event loop polls for input; setImmediate runs right after it has. Bytes
  // that arrived in between have then been read, and the connection is kept.
  setImmediate(() => {
    for (const socket of quiet) {
      if (socket.bytesRead === watched.get(socket)?.bytesRead && !answering(socket)) socket.destroy();
    }
  });
  return quiet.length;
}

/**
 * Node's ServerResponse for the request being answered on this connection, or null between requests.
 * Not in Node's typings; it is what Node's own `server.closeIdleConnections()` checks (lib/_http_server.js).
 */
export function answering(socket: Socket): boolean {
  const response = (socket as Socket & { _httpMessage?: { finished: boolean } | null })._httpMessage;
  return response != null && !response.finished;
}

/**
 * The drain, all of it: `app.close()` runs it (Fastify's preClose), whoever calls it (a signal in
 * server.ts, a test).
 *
 * 1. In one synchronous step, answers start saying `Connection: close` and the listener closes: new
 *    connections are refused, and no client can be told to reconnect before that is so. (Closing the
 *    listener as Node's `server.close()` does would also destroy every connection idle at that instant,
 *    resetting requests that are on their way on them; only the listening socket is closed here.) A
 *    connection the kernel had completed but the server not yet accepted is reset by the kernel: to
 *    its client, a refused connection that looked open for a moment; nothing of it was processed.
 * 2. Every request that arrives on a connection still open is answered, with `Connection: close`, after
 *    which Node closes that connection.
 * 3. A connection with no request in progress is closed once nothing has arrived on it for DRAIN_IDLE_MS
 *    (checked again right after the event loop has read pending input, so bytes already received are
 *    never discarded).
 * 4. The drain ends when no connection is left, or at `drainTimeoutMs` (DRAIN_TIMEOUT), when the
 *    connections still open are closed, requests in flight or not: a request that never finishes cannot
 *    hold the shutdown.
 *
 * Connections are tracked from when they are accepted (one Set entry each; nothing per request but the
 * onSend check of `closing`).
 */
export function drainOnClose(app: FastifyInstance, { drainTimeoutMs }: { drainTimeoutMs: number }): Drain {
  const state = { closing: false };
  const open = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  let sweeper: NodeJS.Timeout | undefined;
  let deadline: NodeJS.Timeout | undefined;

  app.addHook('onSend', (_request, reply, payload, done) => {
    if (state.closing) reply.header('connection', 'close');
    done(null, payload);
  });

  app.addHook('preClose', (done) => {
    state.closing = true;
    deadline = setTimeout(() => {
      app.log.warn({ drainTimeoutMs }, 'requests still in flight at the drain deadline; closing their connections');
      app.server.closeAllConnections();
    }, drainTimeoutMs);
    if (app.server.listening) NetServer.prototype.close.call(app.server);
    const watched = new Map<Socket, Watched>();
    const sweep = (): void => {
      closeQuiet(open, watched, DRAIN_IDLE_MS);
    };
    const finish = (): void => {
      if (open.size > 0) return;
      clearInterval(sweeper);
      clearTimeout(deadline);
      sweeper = undefined;
      done();
    };
    sweep();
    sweeper = setInterval(() => {
      sweep();
      finish();
    }, SWEEP_INTERVAL_MS);
    finish();
  });

  app.addHook('onClose', (_instance, done) => {
    clearInterval(sweeper);
    clearTimeout(deadline);
    done();
  });
  return state;
}
