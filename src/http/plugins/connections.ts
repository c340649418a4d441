import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config/load.js';
import { clientKey, trustedProxies } from '../client-address.js';
import { closeQuiet, type Watched } from './shutdown.js';

/**
 * Near the cap, a connection with no request in progress is closed once nothing has arrived on it for
 * this long, rather than at the keep-alive timeout (72 s). Long enough for a client that has just had
 * its answer to send its next request on the connection (a round trip and a busy client, as in the
 * drain: see shutdown.ts), short enough that connections held open by silence free up at once.
 */
const NEAR_CAP_IDLE_MS = 1000;
/** How often, while near the cap, connections are looked at. */
const SWEEP_INTERVAL_MS = 250;
/** A warning repeats at most this often, with how many times its condition arose meanwhile. */
const WARN_INTERVAL_MS = 60_000;

export type ConnectionSettings = Pick<Config, 'maxConnections' | 'maxConnectionsPerAddress' | 'trustProxy'>;

/**
 * Where idle connections start being closed early: with 7/8 of MAX_CONNECTIONS open, an eighth of the
 * connections is still free for the clients that arrive while the idle ones are found and closed. (At
 * the cap itself Node closes new connections before anyone sees them, so this must start below it.)
 */
export function nearCapAt(maxConnections: number): number {
  return Math.max(1, maxConnections - Math.max(1, Math.floor(maxConnections / 8)));
}

/** A warning logged at once, then at most once per WARN_INTERVAL_MS, with the count of occasions since. */
function throttledWarning(log: FastifyBaseLogger, message: string): (fields: Record<string, unknown>) => void {
  let last = -Infinity;
  let occasions = 0;
  return (fields) => {
    occasions++;
    const now = Date.now();
    if (now - last < WARN_INTERVAL_MS) return;
    log.warn({ ...fields, occasions }, message);
    last = now;
    occasions = 0;
  };
}

/**
 * The server's connection limits, so that idle connections from some clients cannot lock out the others:
 *
 * - MAX_CONNECTIONS: Node closes connections beyond it as soon as they are accepted.
 * - MAX_CONNECTIONS_PER_ADDRESS: a connection from a client (http/client-address.ts: an IPv4 address, an
 *   IPv6 /64) that already has that many open is closed at once, without an answer: no request has been
 *   read on it yet, and an answer before the request would be taken for the answer to whatever the client
 *   sends; reading the request first would mean holding the very connection the client is over its limit
 *   for. (Node treats MAX_CONNECTIONS the same way.) TRUST_PROXY's proxies are not limited: each speaks
 *   for many clients.
 * - Near MAX_CONNECTIONS (nearCapAt), connections with no request in progress are closed after
 *   NEAR_CAP_IDLE_MS of silence (idle between requests, silent since they opened, or stalled in their
 *   headers), checked like the drain's: a connection on which bytes arrived, or whose answer is being
 *   written, is kept.
 *
 * Costs per connection: a Set and a Map entry and a close listener; nothing per request. The sweep,
 * O(open connections), runs only while near the cap.
 */
export function limitConnections(server: Server, settings: ConnectionSettings, log: FastifyBaseLogger): { stop(): void } {
  const { maxConnections, maxConnectionsPerAddress: perAddress } = settings;
  server.maxConnections = maxConnections;
  const nearCap = nearCapAt(maxConnections);
  const exempt = trustedProxies(settings.trustProxy);
  const open = new Set<Socket>();
  const byClient = new Map<string, number>();
  const watched = new Map<Socket, Watched>();
  let sweeper: NodeJS.Timeout | undefined;
  let stopped = false;
  const warnRefused = throttledWarning(log, 'connection refused: its client address has MAX_CONNECTIONS_PER_ADDRESS open');
  const warnNearCap = throttledWarning(log, 'near MAX_CONNECTIONS: closing connections idle for a second');

  const sweep = (): void => {
    if (open.size < nearCap) {
      clearInterval(sweeper);
      sweeper = undefined;
      watched.clear();
      return;
    }
    closeQuiet(open, watched, NEAR_CAP_IDLE_MS);
  };

  server.on('connection', (socket: Socket) => {
    if (perAddress > 0 && !exempt?.(socket.remoteAddress)) {
      const key = clientKey(socket.remoteAddress);
      const count = byClient.get(key) ?? 0;
      if (count >= perAddress) {
        warnRefused({ address: key, limit: perAddress });
        socket.destroy();
        return;
      }
      byClient.set(key, count + 1);
      socket.once('close', () => {
        const left = (byClient.get(key) ?? 1) - 1;
        if (left === 0) byClient.delete(key);
        else byClient.set(key, left);
      });
    }
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      watched.delete(socket);
    });
    if (open.size >= nearCap && sweeper === undefined && !stopped) {
      warnNearCap({ open: open.size, maxConnections });
      sweeper = setInterval(sweep, SWEEP_INTERVAL_MS);
      sweeper.unref();
    }
  });

  return {
    stop() {
      stopped = true;
      clearInterval(sweeper);
      sweeper = undefined;
    },
  };
}
