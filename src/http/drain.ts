import type { FastifyInstance } from 'fastify';

const SWEEP_INTERVAL_MS = 100;

/**
 * Bounded drain on close. Node's server.close() closes keep-alive connections that are idle at that
 * moment only; a connection busy then stays open after its response until the keep-alive timeout
 * (72 s), holding shutdown hostage. So while closing, every response says `Connection: close` (the
 * client will not reuse the socket), and idle connections are swept until the server has closed.
 */
export function drainConnectionsOnClose(app: FastifyInstance): void {
  let closing = false;
  let sweeper: NodeJS.Timeout | undefined;
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('preClose', (done) => {
    closing = true;
    sweeper = setInterval(() => app.server.closeIdleConnections(), SWEEP_INTERVAL_MS);
    done();
  });
  app.addHook('onClose', (_instance, done) => {
    clearInterval(sweeper);
    done();
  });
}
