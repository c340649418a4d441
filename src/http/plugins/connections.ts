import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config/load.js';
import { clientKey, trustedProxies } from '../client-address.js';
import { ApiError, ERRORS, RETRY_AFTER } from '../errors.js';
import { refuseConnection } from './protocol.js';
import { closeQuiet, type Watched } from './shutdown.js';

/**
 * Near the cap, a connection with no request in progress is closed once nothing has arrived on it for
 * this long, rather than at the keep-alive timeout (72 s). Long enough for a client that has just had
 * its answer to send its next request on the connection (a round trip and a busy client, as in the
 * drain: see shutdown.ts), short enough that connections held open by silence free up at once.
 */
const NEAR_CAP_IDLE_MS = 1000;
/**
 * A refused connection is answered once its first request has arrived; one that sends none within this
 * time is closed without an answer, so that refused connections cannot hold the slots left near the cap.
 * As long as an idle connection is given near the cap: a round trip and a busy client.
 */
const REFUSED_WAIT_MS = NEAR_CAP_IDLE_MS;
/**
 * At most this many refused connections of one client address wait for their request at a time; further
 * ones are closed at once, unanswered. Otherwise an address could hold the slots above nearCapAt with
 * refused connections that never send a request. A client refused in a burst still has some of its
 * requests answered, and the others fail as a closed connection, which it retries as any other.
 */
const REFUSALS_WAITING_PER_ADDRESS = 4;
/** How often, while near the cap, connections are looked at. */
const SWEEP_INTERVAL_MS = 250;
/** A warning repeats at most this often, with how many times its condition arose meanwhile. */
const WARN_INTERVAL_MS = 60_000;

export type ConnectionSettings = Pick<Config, 'maxConnections' | 'maxConnectionsPerAddress' | 'trustProxy'>;

/**
 * Where the server is near its cap: idle connections start being closed early, and a client address's
 * share (MAX_CONNECTIONS_PER_ADDRESS) is enforced. With 7/8 of MAX_CONNECTIONS open, an eighth of the
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
 * The server's connection limits, so that idle or slow connections from some clients cannot lock out the
 * others, while a busy client is served whatever its burst as long as the server has room:
 *
 * - MAX_CONNECTIONS: Node closes connections beyond it as soon as they are accepted, without an answer
 *   (none can be read or written before the connection is accepted, and accepting it is what the cap is
 *   there to prevent); such drops are logged at most once a minute.
 * - Near MAX_CONNECTIONS (nearCapAt), and only then, a client (http/client-address.ts: an IPv4 address, an
 *   IPv6 /64) is held to its share, MAX_CONNECTIONS_PER_ADDRESS. Below it, a client may open as many
 *   connections as it likes: pooled keep-alive connections and a burst of new ones cost the others
 *   nothing while connections are free. A connection from a client at its share is refused: its first
 *   request is answered 503 (tooManyConnections, Retry-After, Connection: close) through the app like any
 *   other answer, so that the answer is to a request the client sent (an answer written before the
 *   request would be taken for the answer to whatever it sends next); one that sends none within
 *   REFUSED_WAIT_MS is closed, and past REFUSALS_WAITING_PER_ADDRESS waiting, one is closed at once.
 *   TRUST_PROXY's proxies have no share: each speaks for many clients.
 * - Near MAX_CONNECTIONS, connections with no request in progress are closed after NEAR_CAP_IDLE_MS of
 *   silence (idle between requests, silent since they opened, or stalled in their headers), checked like
 *   the drain's: a connection on which bytes arrived, or whose answer is being written, is kept. Those of
 *   clients over their share go first, down to the share; the others' only if that did not bring the
 *   server below nearCapAt. A client flooding the server with idle connections thus loses its own, and
 *   everyone else keeps theirs.
 *
 * Costs per connection: a Map entry or two and one close listener; nothing per request (the refusal is
 * the protocol hook's one property read, made anyway). The sweep, O(open connections), runs only while
 * near the cap.
 */
export function limitConnections(server: Server, settings: ConnectionSettings, log: FastifyBaseLogger): { stop(): void } {
  const { maxConnections, maxConnectionsPerAddress: perAddress } = settings;
  server.maxConnections = maxConnections;
  const nearCap = nearCapAt(maxConnections);
  const exempt = trustedProxies(settings.trustProxy);
  /** Every open connection, with its client's key (undefined: not held to a share). */
  const open = new Map<Socket, string | undefined>();
  const byClient = new Map<string, number>();
  /** Per client address, its refused connections waiting for their request. */
  const waiting = new Map<string, number>();
  const watched = new Map<Socket, Watched>();
  const refusal = new ApiError(ERRORS.tooManyConnections, ERRORS.tooManyConnections.message, { ...RETRY_AFTER, connection: 'close' });
  let sweeper: NodeJS.Timeout | undefined;
  let stopped = false;
  const warnRefused = throttledWarning(log, 'near MAX_CONNECTIONS: connection refused with 503, its client address holds MAX_CONNECTIONS_PER_ADDRESS');
  const warnNearCap = throttledWarning(log, 'near MAX_CONNECTIONS: closing connections idle for a second');
  const warnDropped = throttledWarning(log, 'at MAX_CONNECTIONS: connection closed unanswered');

  /** Quiet connections of clients over their share, at most down to the share, each client's. */
  const overShare = (): ((socket: Socket) => boolean) | undefined => {
    const excess = new Map<string, number>();
    for (const [key, count] of byClient) if (count > perAddress) excess.set(key, count - perAddress);
    if (excess.size === 0) return undefined;
    return (socket) => {
      const key = open.get(socket);
      const left = key === undefined ? 0 : (excess.get(key) ?? 0);
      if (left === 0) return false;
      excess.set(key as string, left - 1);
      return true;
    };
  };

  const sweep = (): void => {
    if (open.size < nearCap) {
      clearInterval(sweeper);
      sweeper = undefined;
      watched.clear();
      return;
    }
    const pick = perAddress > 0 ? overShare() : undefined;
    const closing = pick ? closeQuiet(open.keys(), watched, NEAR_CAP_IDLE_MS, pick) : 0;
    if (open.size - closing >= nearCap) closeQuiet(open.keys(), watched, NEAR_CAP_IDLE_MS);
  };

  server.on('drop', (data?: { remoteAddress?: string }) => warnDropped({ address: clientKey(data?.remoteAddress), maxConnections }));

  server.on('connection', (socket: Socket) => {
    const key = perAddress > 0 && !exempt?.(socket.remoteAddress) ? clientKey(socket.remoteAddress) : undefined;
    if (key !== undefined) {
      const count = byClient.get(key) ?? 0;
      if (count >= perAddress && open.size >= nearCap) {
        warnRefused({ address: key, limit: perAddress, open: open.size });
        const refused = waiting.get(key) ?? 0;
        if (refused >= REFUSALS_WAITING_PER_ADDRESS) {
          socket.destroy();
          return;
        }
        waiting.set(key, refused + 1);
        refuseConnection(socket, refusal);
        const unanswered = setTimeout(() => socket.destroy(), REFUSED_WAIT_MS);
        unanswered.unref();
        socket.once('close', () => {
          clearTimeout(unanswered);
          const left = (waiting.get(key) ?? 1) - 1;
          if (left === 0) waiting.delete(key);
          else waiting.set(key, left);
        });
      }
      byClient.set(key, count + 1);
    }
    open.set(socket, key);
    socket.once('close', () => {
      open.delete(socket);
      watched.delete(socket);
      if (key === undefined) return;
      const left = (byClient.get(key) ?? 1) - 1;
      if (left === 0) byClient.delete(key);
      else byClient.set(key, left);
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
