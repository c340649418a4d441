import type { FastifyInstance } from 'fastify';
import { SECURITY_HEADERS } from './security-headers.js';

const SWEEP_INTERVAL_MS = 100;
/**
 * Requests a client wrote on a keep-alive connection just before the signal may still be unread when
 * shutdown starts; closing idle connections at once (as Node's server.close() does) would reset them.
 * They get this long to be read and answered (with Connection: close) first.
 */
const SETTLE_MS = 250;


export interface Lifecycle {
  /** True from SIGTERM (app.close()) on: readiness answers 503, answers say Connection: close. */
  readonly closing: boolean;
}

/**
 * Response headers and a bounded drain. Closing starts by settling (SETTLE_MS), then the listener
 * closes. Node's server.close() closes keep-alive connections that are idle at that moment only; a
 * connection busy then would stay open after its response until the keep-alive timeout (72 s), holding
 * shutdown hostage. So while closing, every answer says `Connection: close` (the client will not reuse
 * the socket), and idle connections are swept until the server has closed. (A request that never ends
 * is cut by server.ts after DRAIN_TIMEOUT.)
 */
export function manageLifecycle(app: FastifyInstance): Lifecycle {
  const state = { closing: false };
  let sweeper: NodeJS.Timeout | undefined;
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.headers(SECURITY_HEADERS);
    if (state.closing) reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('preClose', (done) => {
    state.closing = true;
    const stopListening = () => {
      sweeper = setInterval(() => app.server.closeIdleConnections(), SWEEP_INTERVAL_MS);
      done();
    };
    if (app.server.listening) setTimeout(stopListening, SETTLE_MS);
    else stopListening();
  });
  app.addHook('onClose', (_instance, done) => {
    clearInterval(sweeper);
    done();
  });
  return state;
}
